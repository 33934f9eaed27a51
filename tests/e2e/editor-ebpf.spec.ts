/**
 * `<reuseport-editor>` with an eBPF object: nginx's QUIC helper picked with
 * the file input, dropped on the program's box, or loaded from the page's
 * example; the maps filled; the datagrams routed; the run in the card. The
 * expected sockets are counted from the helper's source
 * (tests/fixtures/ebpf/ngx_quic_reuseport_helper.c), never from the widget:
 * a short header's Destination Connection ID opens with 8 bytes that the
 * helper reads most significant first as the SOCKHASH key; the key names its
 * socket, so when flow i's ID opens with the key under which socket i mod 4
 * sits, flow i reaches socket i mod 4; and when every key holds socket 3,
 * every flow reaches socket 3.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { axe } from './axe';
import { expect, test, type Locator } from '@playwright/test';
import { openEditor, routedSockets } from './editor-page';

const OBJECT = fileURLToPath(new URL('../../public/examples/ngx_quic_reuseport_helper.o', import.meta.url));

/** Waits until the object's program is attached and the 8 generated flows are routed. */
async function routedWithObject(w: Locator): Promise<void> {
  await expect(w.locator('.rl-ed-ebpf')).toBeVisible();
  await expect(w.locator('.rl-ed-program .rl-ed-status')).toContainText('ngx_quic_select_socket_by_dcid');
  await expect(w).toHaveAttribute('data-state', 'routed');
  await expect(w.locator('table.rl-ed-routes tbody tr')).toHaveCount(8);
}

test('nginx’s helper picked as a file sends short-header flow i to socket i mod 4, and the card shows its run', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByLabel('ELF object', { exact: true }).setInputFiles(OBJECT);
  await expect(w.locator('.rl-ed-elf-status')).toContainText('Read ngx_quic_reuseport_helper.o (1512 bytes): 1 program');
  // The section name does not say the kind: the reader must.
  await expect(w).toHaveAttribute('data-state', 'bad-maps');
  await expect(w.locator('.rl-ed-live')).toContainText('does not say the program');
  await w.getByLabel('Kind', { exact: true }).selectOption('sk_reuseport');
  await routedWithObject(w);
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
  const card = w.locator('.rl-ed-card');
  await expect(card).toContainText('Helper calls, with their results');
  await expect(card.locator('table', { hasText: 'bpf_sk_select_reuseport' })).toBeVisible();
  await expect(card).toContainText('Maps after this datagram');
  await expect(card).toContainText('ngx_quic_sockmap (4 entries)');
});

test('the example loads from the page; a map that puts socket 3 at every key sends every flow to socket 3', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByRole('button', { name: "Load nginx's QUIC helper (ELF)" }).click();
  await routedWithObject(w);
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
  // The generator says what it writes for the object: each ID opens with a socket's map key.
  await expect(w.getByLabel(/opens with the key of socket i mod the number of sockets/)).toBeChecked();
  await w.getByLabel('Entries of ngx_quic_sockmap').fill('0 3\n1 3\n2 3\n3 3');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w).toHaveAttribute('data-state', 'routed');
  expect(await routedSockets(w)).toEqual(['3', '3', '3', '3', '3', '3', '3', '3']);
  // A listener the group does not have: the model refuses the map, naming it; nothing is routed.
  await w.getByLabel('Entries of ngx_quic_sockmap').fill('0 0\n1 9');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w).toHaveAttribute('data-state', 'bad-maps');
  await expect(w.locator('.rl-ed-live')).toContainText('map ngx_quic_sockmap, key 1: listener 9, but the group has 4');
  await expect(w.getByLabel('Entries of ngx_quic_sockmap')).toHaveAttribute('aria-invalid', 'true');
  // A line that is not an entry is named.
  await w.getByLabel('Entries of ngx_quic_sockmap').fill('0 0\nzero 1');
  await w.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(w.locator('.rl-ed-live')).toContainText('line 2');
});

test('an object dropped on the program’s box is read', async ({ page }) => {
  const w = await openEditor(page);
  const bytes = [...readFileSync(OBJECT)];
  const dt = await page.evaluateHandle((b) => {
    const d = new DataTransfer();
    d.items.add(new File([new Uint8Array(b)], 'helper.o', { type: 'application/octet-stream' }));
    return d;
  }, bytes);
  await w.locator('.rl-ed-program').dispatchEvent('drop', { dataTransfer: dt });
  await expect(w.locator('.rl-ed-elf-status')).toContainText('Read helper.o');
  await w.getByLabel('Kind', { exact: true }).selectOption('sk_reuseport');
  await routedWithObject(w);
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
});

test('a file that is not an object, or too big, is named with what is wrong; the text program stays attached', async ({ page }) => {
  const w = await openEditor(page);
  const file = w.getByLabel('ELF object', { exact: true });
  await file.setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not an ELF object\n') });
  await expect(w.locator('.rl-ed-elf-status')).toContainText('notes.txt is not an eBPF object the model reads');
  await expect(file).toHaveAttribute('aria-invalid', 'true');
  await expect(w.locator('.rl-ed-ebpf')).toBeHidden();
  await file.setInputFiles({ name: 'huge.o', mimeType: 'application/octet-stream', buffer: Buffer.alloc((4 << 20) + 1) });
  await expect(w.locator('.rl-ed-elf-status')).toContainText('objects are read up to 4194304 bytes');
  await expect(w).toHaveAttribute('data-state', 'routed');
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
});

test('by keyboard: the example loads from its button, a line opens its run, and axe finds no violation', async ({ page }) => {
  const w = await openEditor(page);
  await w.getByRole('button', { name: "Load nginx's QUIC helper (ELF)" }).focus();
  await page.keyboard.press('Enter');
  await routedWithObject(w);
  const third = w.getByRole('button', { name: 'Show the lookup of line 3' });
  await third.focus();
  await page.keyboard.press('Enter');
  await expect(w.locator('.rl-ed-card')).toBeFocused();
  await expect(w.locator('.rl-ed-card')).toContainText('socket 2');
  const r = await axe(page).include('reuseport-editor').analyze();
  expect(r.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
});

test('in Chinese the object’s part speaks Chinese', async ({ page }) => {
  const w = await openEditor(page, '/zh-cn/steering/');
  await w.getByRole('button', { name: '载入 nginx 的 QUIC 辅助程序（ELF）' }).click();
  await routedWithObject(w);
  await expect(w.locator('.rl-ed-elf-status')).toContainText('已读入');
  await expect(w.locator('.rl-ed-card')).toContainText('辅助函数调用及其结果');
  expect(await routedSockets(w)).toEqual(['0', '1', '2', '3', '0', '1', '2', '3']);
  // The run's call, its rule and its end are the model's facts said by the Chinese catalogue, not the model's English.
  const calls = w.locator('.rl-ed-card table', { hasText: 'bpf_sk_select_reuseport' });
  await expect(calls).toContainText('选中套接字 0');
  await expect(calls).toContainText('没有时返回 -ENOENT');
  await expect(calls).not.toContainText('selected');
  await expect(w.locator('.rl-ed-card')).toContainText('exit：返回 1');
  // A refused map fill says the model's reason in Chinese: the map, the key, the listener and the group's size.
  await w.getByLabel('ngx_quic_sockmap 的表项').fill('0 0\n1 9');
  await w.getByRole('button', { name: '发送', exact: true }).click();
  await expect(w).toHaveAttribute('data-state', 'bad-maps');
  const refused = '映射表 ngx_quic_sockmap 的键 1：组里没有监听套接字 9（组里共 4 个，从 0 开始编号）';
  await expect(w.locator('.rl-ed-live')).toContainText(refused);
  await expect(w.locator('.rl-ed-live')).not.toContainText('listener');
});
