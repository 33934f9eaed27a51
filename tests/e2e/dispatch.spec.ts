import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';

const SECRET = '0x5eed1234';
const CLIENTS = Array.from({ length: 60 }, (_, i) => `198.51.100.${(i * 7) % 250 + 2} ${33000 + i * 131}`);

// Build first with stdin closed: when cargo re-probes rustc it passes its own stdin on, and the
// tuples piped to predict would then be read as Rust source.
test.beforeAll(() => {
  execFileSync('cargo', ['build', '-q', '-p', 'reuseport-agent'], { stdio: ['ignore', 'inherit', 'inherit'] });
});

type Predicted = { tuple: string; listener: number | null; slot: number | null; hash: string };

function predict(lines: string[], o: { kernel: string; listeners: number; closed?: string; explain?: boolean }): Predicted[] {
  const args = ['predict', '--kernel', o.kernel, '--proto', 'tcp', '--listeners', String(o.listeners), '--secret', SECRET];
  if (o.closed) args.push('--closed', o.closed);
  if (o.explain) args.push('--explain');
  const out = execFileSync('target/debug/reuseport-agent', args, { input: lines.join('\n'), encoding: 'utf8' });
  return out.trim().split('\n').map((l) => JSON.parse(l) as Predicted);
}

async function setup(page: Page, o: { kernel?: string; listeners?: number; clients?: string[] } = {}) {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  await page.getByLabel('Kernel profile').selectOption(o.kernel ?? '6.18');
  await page.getByLabel('Listeners', { exact: true }).fill(String(o.listeners ?? 8));
  await page.getByLabel('Hash secret (IPv4)').fill(SECRET);
  await page.getByLabel(/Client list/).fill((o.clients ?? CLIENTS).join('\n'));
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(page.locator('.rl-dv-summary')).toContainText(`${(o.clients ?? CLIENTS).length} clients`);
}

const currentRow = (page: Page) => page.locator('.rl-dv-events tbody tr[aria-current="true"]');
const headline = (page: Page) => page.locator('.rl-dv-inspector .rl-headline').nth(1);

test('step back then step forward shows the same event', async ({ page }) => {
  await setup(page);
  const fwd = page.getByRole('button', { name: 'Step forward' });
  for (let i = 0; i < 4; i++) await fwd.click();
  await expect(currentRow(page).locator('th')).toHaveText('3');
  const row = await currentRow(page).innerText();
  const head = await headline(page).innerText();
  await page.getByRole('button', { name: 'Step back' }).click();
  await expect(currentRow(page).locator('th')).toHaveText('2');
  await fwd.click();
  await expect(currentRow(page).locator('th')).toHaveText('3');
  expect(await currentRow(page).innerText()).toBe(row);
  expect(await headline(page).innerText()).toBe(head);
});

test('closing a listener moves exactly the flows reuseport-agent predict says move', async ({ page }) => {
  for (const c of [{ kernel: '6.18', listeners: 8, close: 2 }, { kernel: '5.10', listeners: 5, close: 0 }]) {
    await setup(page, { kernel: c.kernel, listeners: c.listeners });
    const tuples = CLIENTS.map((l) => `${l} 10.0.0.1 8080`);
    const before = predict(tuples, { kernel: c.kernel, listeners: c.listeners });
    const after = predict(tuples, { kernel: c.kernel, listeners: c.listeners, closed: String(c.close) });
    const want = CLIENTS.flatMap((l, i) => (before[i]!.listener === after[i]!.listener ? [] : [[l.replace(' ', ':'), `L${before[i]!.listener}`, `L${after[i]!.listener}`]]));
    expect(want.length).toBeGreaterThan(0);
    await page.getByLabel('Listener', { exact: true }).selectOption(String(c.close));
    await page.getByRole('button', { name: 'Close listener' }).click();
    await expect(page.locator('.rl-dv-remap')).toContainText(`${want.length} of ${CLIENTS.length} client flows`);
    const got = await page.locator('.rl-dv-moved-table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(got).toEqual(want);
  }
});

test("the inspector's numbers equal reuseport-agent predict", async ({ page }) => {
  await setup(page, { listeners: 12 });
  await page.getByRole('button', { name: 'Step forward' }).click();
  const first = await currentRow(page).locator('td').nth(2).innerText();
  const [addr, port] = first.split(':');
  const want = predict([`${addr} ${port} 10.0.0.1 8080`], { kernel: '6.18', listeners: 12, explain: true })[0] as unknown as { listener: number; slot: number; hash: { hashHex: string; calls: { words: string[] }[] }; pick: { productHex: string; scaled: number } };
  await expect(headline(page)).toHaveText(`TCP ${addr}:${port} → 10.0.0.1:8080 on kernel 6.18: listener ${want.listener} in socks[${want.slot}], hash ${want.hash.hashHex}.`);
  const insp = page.locator('.rl-dv-inspector');
  await expect(insp).toContainText(`0x${want.pick.productHex}`);
  await expect(insp).toContainText(`slot ${want.pick.scaled}`);
  for (const w of want.hash.calls[0]!.words) await expect(insp).toContainText(w);
});

test('the visualizer works from the keyboard', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  const play = page.getByRole('button', { name: 'Play' });
  await play.focus();
  await page.keyboard.press('Space');
  await expect(page.getByRole('button', { name: 'Pause' })).toHaveAttribute('aria-pressed', 'true');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Play' })).toHaveAttribute('aria-pressed', 'false');
  await page.keyboard.press('Tab'); // Step back
  await page.keyboard.press('Tab'); // Step forward
  await expect(page.getByRole('button', { name: 'Step forward' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(currentRow(page)).toHaveCount(1);
  // An event row's button opens its record.
  const btn = page.locator('.rl-dv-rowbtn').first();
  await btn.focus();
  await page.keyboard.press('Enter');
  await expect(page.locator('.rl-dv-inspector')).toContainText('reciprocal_scale and the slot');
  // Add and close listeners from the keyboard.
  await page.getByRole('button', { name: 'Add listener' }).focus();
  await page.keyboard.press('Enter');
  await expect(page.locator('.rl-dv-remap')).toContainText('Listener 8 joined at socks[8]');
});

test('the visualizer has no axe violations', async ({ page }) => {
  await setup(page);
  await page.getByRole('button', { name: 'Step forward' }).click();
  await page.getByRole('button', { name: 'Close listener' }).click();
  await page.locator('.rl-dv-moved summary').click();
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations).toEqual([]);
});

test('with reduced motion the scene starts paused and plays in steps', async ({ page }) => {
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.goto('./dispatch/?seed=7&rate=5');
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Play' })).toHaveAttribute('aria-pressed', 'false');
  await page.getByRole('button', { name: 'Play' }).click();
  // Frames run only while the scene is on screen.
  await page.locator('.rl-dv-stage').scrollIntoViewIfNeeded();
  // One simulated second per step: 5 connections of 3 packets each.
  await expect(page.locator('.rl-dv-events tbody tr')).toHaveCount(12, { timeout: 5000 });
});

test('the custom element mounts, runs old kernels and few clients, and disposes', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('./dispatch/?autoplay=false&kernel=3.9&listeners=4&clients=6');
  await expect(page.locator('.rl-dv-summary')).toContainText('reservoir scan');
  await page.getByRole('button', { name: 'Step forward' }).click();
  await expect(page.locator('.rl-dv-inspector')).toContainText('Reservoir scan over the chain');
  await expect(page.locator('.rl-dv-overlay .rl-dv-client')).toHaveCount(6);
  await page.evaluate(() => {
    const el = document.createElement('reuseport-dispatch');
    el.setAttribute('listeners', '3');
    el.setAttribute('proto', 'udp');
    el.id = 'extra';
    document.body.append(el);
  });
  await expect(page.locator('#extra .rl-dv-summary')).toContainText('UDP group');
  await expect(page.locator('#extra .rl-dv-events tbody tr')).toHaveCount(0); // off screen: no frames
  await page.locator('#extra .rl-dv-stage').scrollIntoViewIfNeeded();
  await expect(page.locator('#extra .rl-dv-events tbody tr').first()).toContainText('UDP');
  const stopped = await page.evaluate(() => {
    const el = document.getElementById('extra')!;
    const { clock } = (el as unknown as { __dispatch: { clock: { running: boolean } } }).__dispatch;
    el.remove();
    return clock.running;
  });
  expect(stopped).toBe(false);
  await expect(page.locator('#extra')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('clicking a packet in flight opens its record', async ({ page }) => {
  await page.goto('./dispatch/?seed=7&rate=20');
  await page.locator('.rl-dv-stage').scrollIntoViewIfNeeded();
  await expect(page.locator('.rl-dv-events tbody tr')).not.toHaveCount(0);
  await page.waitForTimeout(1200);
  await page.getByRole('button', { name: 'Pause' }).click();
  const target = await page.evaluate(() => {
    type P = { x: number; y: number; seq: number };
    const d = (document.querySelector('reuseport-dispatch') as unknown as { __dispatch: { packets: () => P[] } }).__dispatch;
    const ps = d.packets();
    return ps.find((p) => ps.every((q) => q === p || Math.hypot(q.x - p.x, q.y - p.y) > 12)) ?? null;
  });
  expect(target).not.toBeNull();
  await page.locator('.rl-dv-canvas').click({ position: { x: target!.x, y: target!.y } });
  await expect(page.locator('.rl-dv-inspector .rl-headline').first()).toContainText(`Event ${target!.seq}:`);
  await expect(page.locator('.rl-dv-inspector')).toContainText('Hash: inet_ehashfn');
});

type Tagged = { kind: string } & Record<string, unknown>;
type LookupPredicted = { socket: number | null; tables: { table: Tagged; candidates: { socket: number; score: number; outcome: { kind: string } & Record<string, unknown> }[] }[] };

/** An outcome as the English table says it (messages/en.json), for comparing with the page. */
const EN = JSON.parse(readFileSync('messages/en.json', 'utf8')) as Record<string, string>;
const sayTag = (group: string, o: Tagged) => EN[`${group}.${o.kind}`]!.replace(/\{(\w+)\}/g, (_, n: string) => String(o[n]));

function predictLayout(lines: string[], kernel: string): LookupPredicted[] {
  const args = ['predict', '--kernel', kernel, '--layout', 'tests/fixtures/layouts/addr-any.json', '--secret', SECRET, '--explain'];
  const out = execFileSync('target/debug/reuseport-agent', args, { input: lines.join('\n'), encoding: 'utf8' });
  const [calls, ...rest] = out.trim().split('\n');
  expect(JSON.parse(calls!)).toHaveProperty('calls');
  return rest.map((l) => JSON.parse(l) as LookupPredicted);
}

test('the lookup panel for reuseport_addr_any: the specific socket wins on 6.18, not on 4.17, as reuseport-agent predict says', async ({ page }) => {
  const panel = page.locator('.rl-dv-lookup');
  for (const kernel of ['6.18', '4.17']) {
    await setup(page, { kernel });
    await page.getByLabel('Lookup layout').selectOption('addr_any');
    await page.getByRole('button', { name: 'Step forward' }).click();
    const client = await currentRow(page).locator('td').nth(2).innerText();
    const [addr, port] = client.split(':');
    const want = predictLayout([`${addr} ${port} 127.0.0.1 8888`], kernel)[0]!;
    if (kernel === '6.18') expect(want.socket).toBe(4);
    else expect(want.socket).not.toBe(4);
    await expect(panel.locator('.rl-dv-lookup-head')).toContainText(`→ 127.0.0.1:8888`);
    await expect(panel.locator('.rl-dv-lookup-head')).toContainText(`socket ${want.socket} (`);
    await expect(panel.locator('.rl-dv-walk h3')).toHaveText(want.tables.map((t, i) => `Table ${i + 1}: ${sayTag('table_name', t.table)}`));
    const rows = await panel.locator('.rl-dv-candidates').evaluateAll((ts) => ts.map((t) => [...t.querySelectorAll('tbody tr')].map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? ''))));
    expect(rows.map((t) => t.map((r) => [r[0]!.split(' (')[0], r[1]!.split(' ')[0], r[2]]))).toEqual(want.tables.map((t) => t.candidates.map((c) => [`socket ${c.socket}`, String(c.score), sayTag('candidate_outcome', c.outcome)])));
    await expect(panel).toContainText('socket 9: bind() fails with EADDRINUSE');
    if (kernel === '6.18') await expect(panel.locator('.rl-dv-walk h3').first()).toHaveText('Table 1: lhash2 (127.0.0.1, 8888)');
    else await expect(panel.locator('.rl-dv-walk h3').first()).toContainText('listening_hash (port-keyed, 32 buckets)');
  }
});

test('the lookup panel follows the inspected packet in the visualized group, from the keyboard, axe clean', async ({ page }) => {
  await setup(page, { kernel: '6.18' });
  await page.getByRole('button', { name: 'Step forward' }).focus();
  await page.keyboard.press('Enter');
  const listener = await currentRow(page).locator('td').nth(4).innerText();
  const panel = page.locator('.rl-dv-lookup');
  await expect(panel.locator('.rl-dv-lookup-head')).toContainText(`listener ${listener} of the visualized group`);
  await expect(panel.locator('.rl-dv-walk h3').first()).toHaveText('Table 1: lhash2 (10.0.0.1, 8080)');
  await expect(page.locator('.rl-dv-insp-lookup')).toContainText('Listener lookup (Host model): lhash2 (10.0.0.1, 8080)');
  // Keyboard: the layout select is reachable and changes the panel.
  await page.getByLabel('Lookup layout').focus();
  await page.keyboard.press('ArrowDown');
  await expect(panel.locator('.rl-dv-lookup-head')).toContainText('→ 127.0.0.1:8888');
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations).toEqual([]);
});

test('programs: payload_mod reads the datagram number; SK_REUSEPORT drop is refused on 4.17 with the model’s reason', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  await page.getByLabel('Protocol').selectOption('udp');
  await page.getByLabel('Group program (BPF)').selectOption('payload_mod');
  await page.getByLabel('Payload modulus N').fill('3');
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  const fwd = page.getByRole('button', { name: 'Step forward' });
  for (let i = 0; i < 4; i++) {
    await fwd.click();
    await expect(currentRow(page).locator('td').nth(7)).toHaveText(new RegExp(`^datagram ${i} \\(payload ${i}\\) to listener ${i % 3} \\(socks\\[${i % 3}\\]\\)$`));
  }
  await expect(page.locator('.rl-dv-inspector')).toContainText('payload word mod 3');
  await page.getByLabel('Kernel profile').selectOption('4.17');
  await page.getByLabel('Group program (BPF)').selectOption('drop');
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(page.locator('.rl-errors')).toContainText('SK_REUSEPORT');
  await expect(page.locator('.rl-errors')).toContainText('4.19');
  await page.getByLabel('Kernel profile').selectOption('6.18');
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(page.locator('.rl-errors')).toHaveText('');
  await fwd.click();
  await expect(currentRow(page).locator('td').nth(4)).toHaveText('none');
});
