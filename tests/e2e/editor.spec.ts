/**
 * `<reuseport-editor>` on the steering chapter: a program pasted in each
 * form, a bad line named, datagrams routed, and the whole thing by keyboard.
 * The expected sockets are counted by hand from the programs' text (the
 * payload word mod 4; the connection ID's first byte, which the generator
 * writes as flow i mod the sockets), never taken from the widget's code.
 */
import { expect, test } from '@playwright/test';
import { openEditor, routedSockets } from './editor-page';

const MOD4 = {
  asm: 'ld [0]\nmod #4\nret a\n',
  dd: '{ 0x20, 0, 0, 0x00000000 },\n{ 0x94, 0, 0, 0x00000004 },\n{ 0x16, 0, 0, 0x00000000 },\n',
  json: '{"kind": "cbpf", "insns": [\n  [32, 0, 0, 0],\n  [148, 0, 0, 4],\n  [22, 0, 0, 0]\n]}',
};
const WORDS = Array.from({ length: 8 }, (_, k) => `192.0.2.1:${40000 + k} 127.0.0.1:443 payload=0000000${k}`).join('\n');

test('the connection-ID example sends 1-RTT flow i to socket i mod 4', async ({ page }) => {
  const w = await openEditor(page);
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
  await expect(w.locator('.rl-ed-ok')).toContainText('accepted');
  // The card shows the first line's lookup, with the program's run.
  await expect(w.locator('.rl-ed-card')).toContainText('Instructions taken');
});

for (const [form, text] of Object.entries(MOD4)) {
  test(`a program pasted as ${form} routes datagram k to socket k mod 4`, async ({ page }) => {
    const w = await openEditor(page);
    await w.getByLabel('Classic BPF program').fill(text);
    await w.getByLabel('One datagram per line').fill(WORDS);
    await w.getByRole('button', { name: 'Send', exact: true }).click();
    await expect(w).toHaveAttribute('data-state', 'routed');
    await expect(w.locator('.rl-ed-program .rl-ed-status')).toContainText('Read 3 instructions');
    expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
  });
}

test('a line that is not an instruction is named, and nothing is routed', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('Classic BPF program').fill('ld [0]\nfrob #1\nret a');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w).toHaveAttribute('data-state', 'bad-program');
  await expect(w.locator('.rl-ed-program .rl-ed-status')).toContainText('Line 2:');
  await expect(w.getByLabel('Classic BPF program')).toHaveAttribute('aria-invalid', 'true');
  await expect(w.locator('table.rl-ed-routes')).toHaveCount(0);
});

test("the kernel's refusal names the program's line, and the hash decides", async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('Classic BPF program').fill('; a division by the constant 0\nld [0]\ndiv #0\nret a');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w).toHaveAttribute('data-state', 'refused');
  await expect(w.locator('.rl-ed-refused')).toContainText('EINVAL (line 3 of the program)');
  await expect(w.locator('table.rl-ed-routes tbody tr')).toHaveCount(8);
});

test('a bad datagram line is named; the good ones are routed', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('One datagram per line').fill('192.0.2.1:40000 127.0.0.1:443 payload=00\n192.0.2.1:40001 127.0.0.1:443 payload=abc\n');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w.locator('.rl-ed-bad')).toContainText('Line 2:');
  await expect(w.locator('table.rl-ed-routes tbody tr')).toHaveCount(1);
});

test('by keyboard: Ctrl+Enter sends, a line number opens its lookup and focus moves to the card', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('Classic BPF program').fill(MOD4.asm);
  await w.getByLabel('One datagram per line').fill(WORDS);
  await w.getByLabel('One datagram per line').press('Control+Enter');
  await expect(w.locator('.rl-ed-program .rl-ed-status')).toContainText('Read 3 instructions');
  const third = w.getByRole('button', { name: 'Show the lookup of line 3' });
  await third.focus();
  await page.keyboard.press('Enter');
  await expect(w.locator('.rl-ed-card')).toBeFocused();
  await expect(w.locator('.rl-ed-card h3')).toHaveText('Line 3: the lookup, step by step');
  await expect(third).toHaveAttribute('aria-pressed', 'true');
});

test('the generator adds Initial packets, which the hash decides', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('Packet', { exact: true }).selectOption('initial');
  await w.getByRole('button', { name: 'Add and send' }).click();
  await expect(w.locator('table.rl-ed-routes tbody tr')).toHaveCount(16);
  // The program returns 4294967295 for an Initial: past the group, the hash decides.
  await expect(w.locator('table.rl-ed-routes tbody tr').nth(15)).toContainText('4294967295');
});

test('in Chinese the editor speaks Chinese', async ({ page }) => {
  const w = await openEditor(page, '/zh-cn/steering/');
  await expect(w.locator('legend').first()).toHaveText('程序');
  await expect(w.locator('.rl-ed-ok')).toContainText('成功');
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
});

test('a widget whose code cannot load says so in the page’s language (the loader’s catalogue sentence)', async ({ page }) => {
  // The editor's module fails to arrive; the catalogue's module still does.
  await page.route(/\/_astro\/editor\.[^/]*\.js$/, (r) => r.abort());
  await page.goto('/zh-cn/steering/');
  const w = page.locator('reuseport-editor');
  await w.scrollIntoViewIfNeeded();
  await expect(w.getByRole('alert')).toContainText('此组件未能加载：');
  await expect(w.getByRole('alert')).not.toContainText('failed to load');
});
