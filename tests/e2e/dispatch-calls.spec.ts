/**
 * The visualizer's controls are calls on one model Host: a new listener is socket, SO_REUSEPORT, bind and
 * listen; a close is close; a new secret re-keys that Host. The animation and the Listener lookup panel ask the
 * same Host, so they agree after any sequence of controls, including a listener that joins after a close (which
 * the earlier scene could not show in the panel). The expected answers come from reuseport-agent predict with a
 * call log written here by hand, never from the page.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { AGENT } from '../agent';

const SECRET = '0x5eed1234';
const CLIENTS = Array.from({ length: 60 }, (_, i) => `198.51.100.${((i * 7) % 250) + 2} ${33000 + i * 131}`);

type Call = Record<string, unknown>;

/** The calls a program makes for one TCP listener on 10.0.0.1:8080 as socket `fd`. */
const listener = (fd: number): Call[] => [
  { call: 'socket', family: 'inet', proto: 'tcp' },
  { call: 'setsockopt', fd, opt: { reuseport: true } },
  { call: 'bind', fd, addr: '10.0.0.1', port: 8080 },
  { call: 'listen', fd },
];

/** The receiving socket of each client line, by reuseport-agent predict --layout (the full lookup over a call log). */
function predictCalls(calls: Call[], secret: string): (number | null)[] {
  const dir = mkdtempSync(join(tmpdir(), 'rl-calls-'));
  const file = join(dir, 'layout.json');
  writeFileSync(file, JSON.stringify({ calls }));
  const input = CLIENTS.map((l) => `${l} 10.0.0.1 8080`).join('\n');
  const out = execFileSync(AGENT, ['predict', '--kernel', '6.18', '--proto', 'tcp', '--secret', secret, '--layout', file], { input, encoding: 'utf8' });
  // The first line gives each call's answer and where each socket ended up; then one object per tuple.
  const [head, ...rows] = out.trim().split('\n');
  const answers = (JSON.parse(head!) as { answers: unknown[] }).answers;
  expect(answers.every((a) => a === null)).toBe(true);
  return rows.map((r) => (JSON.parse(r) as { socket: number | null }).socket);
}

async function setup(page: Page, listeners: number) {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Kernel profile').selectOption('6.18');
  await page.getByLabel('Listeners', { exact: true }).fill(String(listeners));
  await page.getByLabel('Hash secret (IPv4)').fill(SECRET);
  await page.getByLabel(/Client list/).fill(CLIENTS.join('\n'));
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(page.locator('.rl-dv-summary')).toContainText(`${CLIENTS.length} clients`);
}

/** The flows the moved-flows table lists: [client, from, to]. */
const movedRows = (page: Page) =>
  page.locator('.rl-dv-moved-table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));

/** The flows that land elsewhere between two answers per client, as the moved-flows table writes them. */
function movedBetween(before: (number | null)[], after: (number | null)[]): string[][] {
  const name = (l: number | null) => (l === null ? 'none' : `L${l}`);
  return CLIENTS.flatMap((l, i) => (before[i] === after[i] ? [] : [[l.replace(' ', ':'), name(before[i]!), name(after[i]!)]]));
}

/** Steps `n` SYNs and checks each one's listener against the Listener lookup panel and `want` (per client line). */
async function stepAndCompare(page: Page, n: number, want: (number | null)[]) {
  const panel = page.locator('.rl-dv-lookup');
  const fwd = page.getByRole('button', { name: 'Step forward' });
  let syns = 0;
  for (let i = 0; syns < n && i < 4 * n; i++) {
    await fwd.click();
    const row = page.locator('.rl-dv-events tbody tr[aria-current="true"]');
    if ((await row.locator('td').nth(1).innerText()) !== 'SYN') continue;
    syns++;
    const client = (await row.locator('td').nth(2).innerText()).replace(':', ' ');
    const shown = await row.locator('td').nth(4).innerText();
    const expected = want[CLIENTS.indexOf(client)];
    expect(expected, `client ${client} is one of the list`).not.toBeUndefined();
    expect(shown).toBe(expected === null ? 'none' : `L${expected}`);
    await expect(panel.locator('.rl-dv-lookup-head')).toContainText(`listener L${expected} of the visualized group`);
    // The inspector's line compares the lookup with the animated answer and says nothing when they agree.
    await expect(page.locator('.rl-dv-insp-lookup')).toContainText('Listener lookup (Host model)');
    await expect(page.locator('.rl-dv-insp-lookup')).not.toContainText('changed since');
  }
  expect(syns).toBe(n);
}

test('a listener that joins after a close: the moved flows, the animation and the lookup panel are the model Host’s', async ({ page }) => {
  await setup(page, 6);
  const six = [0, 1, 2, 3, 4, 5].flatMap(listener);
  const closed = [...six, { call: 'close', fd: 1 }];
  const joined = [...closed, ...listener(6)];
  const [b, c, j] = [predictCalls(six, SECRET), predictCalls(closed, SECRET), predictCalls(joined, SECRET)];
  await page.getByLabel('Listener', { exact: true }).selectOption('1');
  await page.getByRole('button', { name: 'Close listener' }).click();
  expect(await movedRows(page)).toEqual(movedBetween(b, c));
  await page.getByRole('button', { name: 'Add listener' }).click();
  const want = movedBetween(c, j);
  expect(want.length, 'the late listener takes some flows').toBeGreaterThan(0);
  await expect(page.locator('.rl-dv-remap')).toContainText(`${want.length} of ${CLIENTS.length} client flows`);
  expect(await movedRows(page)).toEqual(want);
  await page.locator('.rl-dv-lookup > summary').click();
  await stepAndCompare(page, 6, j);
  await expect(page.locator('.rl-dv-lookup')).toContainText('7 TCP sockets');
  await expect(page.locator('.rl-dv-lookup')).toContainText('1 of them closed');
});

test('after a new secret, a lookup agrees with the animation and with predict under that secret', async ({ page }) => {
  await setup(page, 5);
  const calls = [0, 1, 2, 3, 4].flatMap(listener);
  const NEW = '0x0badf00d';
  const before = predictCalls(calls, SECRET);
  const after = predictCalls(calls, NEW);
  await page.getByLabel('Hash secret (IPv4)').fill(NEW);
  await page.getByRole('button', { name: 'Set secret' }).click();
  await expect(page.locator('.rl-dv-remap')).toContainText(`${movedBetween(before, after).length} of ${CLIENTS.length} client flows`);
  await page.locator('.rl-dv-lookup > summary').click();
  await stepAndCompare(page, 5, after);
});

test('a call the kernel refuses is said with its errno and rule, and the scene stays as it was', async ({ page }) => {
  await setup(page, 4);
  // SO_INCOMING_CPU on a closed socket: setsockopt() on a closed fd is EBADF.
  await page.getByLabel('Listener', { exact: true }).selectOption('2');
  await page.getByRole('button', { name: 'Close listener' }).click();
  await expect(page.locator('.rl-dv-summary')).toContainText('3 listening members');
  // The select lists listening members only; a program could still call setsockopt on the closed fd.
  await page.getByLabel('Listener', { exact: true }).evaluate((sel: HTMLSelectElement) => {
    const o = document.createElement('option');
    o.value = '2';
    o.textContent = 'L2';
    sel.append(o);
    sel.value = '2';
  });
  await page.getByRole('button', { name: 'Set CPU' }).click();
  await expect(page.locator('.rl-errors')).toContainText('EBADF');
  await expect(page.locator('.rl-dv-summary')).toContainText('3 listening members');
});
