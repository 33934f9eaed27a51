/**
 * `<reuseport-quic-reload>` on the QUIC reload scenario page: the kernel's
 * columns are the recording's counts (read here from the file, not from the
 * widget), the agreement is the recording's, and under the recording's key
 * the model's columns equal the kernel's.
 */
import { readFileSync } from 'node:fs';
import { expect, test, type Locator } from '@playwright/test';

const rec = JSON.parse(readFileSync('public/traces/quic-reload.json', 'utf8')) as {
  runs: { variant: string; measured: { fates: Record<string, number> }; compared: number; agreed: number }[];
};
const fates = (v: string) => rec.runs.find((r) => r.variant === v)!.measured.fates;
const ROWS = ['before', 'oldKept', 'oldBroken', 'newHung', 'newEstablished', 'afterKept', 'afterBroken'];

async function columns(w: Locator): Promise<string[][]> {
  return w.locator('table.rl-qr-table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent ?? '')));
}

test('the card sets the model beside the recording, and under its key they agree', async ({ page }) => {
  await page.goto('/scenarios/quic-reload/');
  const w = page.locator('reuseport-quic-reload');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  const total = rec.runs.reduce((a, r) => a + r.compared, 0);
  const agreed = rec.runs.reduce((a, r) => a + r.agreed, 0);
  await expect(w.locator('.rl-qr-agree')).toContainText(`agree on ${agreed} of ${total} datagrams`);
  const kernel = ROWS.map((k) => [String(fates('no-program')[k]), String(fates('cid-program')[k])]);
  const atRest = await columns(w);
  expect(atRest.map((r) => [r[1], r[3]])).toEqual(kernel);
  // The program keeps every old flow whatever the key.
  expect(atRest[1]![2]).toBe('64');
  await w.getByRole('button', { name: "The recording's key" }).click();
  const under = await columns(w);
  expect(under.map((r) => [r[0], r[2]])).toEqual(kernel);
  await w.getByRole('button', { name: 'Another boot' }).click();
  await expect(w.locator('p.rl-hint')).not.toContainText('0x5eed0001');
  expect((await columns(w))[1]![2]).toBe('64');
});

test('in Chinese the card speaks Chinese', async ({ page }) => {
  await page.goto('/zh-cn/scenarios/quic-reload/');
  const w = page.locator('reuseport-quic-reload');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect(w.getByRole('button', { name: '换一次启动' })).toBeVisible();
  await expect(w.locator('.rl-qr-agree')).toContainText('个一致');
});
