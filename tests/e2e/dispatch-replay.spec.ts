/**
 * "Your server, replayed": a measured trace of the repository (public/traces/, recorded on a real kernel by
 * reuseport-agent record) loaded into the visualizer, each record sent to the listener the kernel chose and the
 * model's answer checked beside it. The expected counts are made here from the file itself: its records, and the
 * listener reuseport-agent predict gives each (a separate program), compared one by one.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect, test, type Page } from '@playwright/test';
import { AGENT } from '../agent';

const FILE = 'tcp-v4-closed-1-5.json';
type Rec = { saddr: string; sport: number; daddr: string; dport: number; listener: number };
const trace = JSON.parse(readFileSync(`public/traces/${FILE}`, 'utf8')) as {
  kernel: { profile: string };
  group: { proto: string; bind: string; port: number; listeners: number; closed: number[] };
  events: Rec[];
};
const manifestKey = (JSON.parse(readFileSync('public/traces/manifest.json', 'utf8')) as { traces: { file: string; key?: string }[] }).traces.find(
  (t) => t.file === FILE,
)!.key!;

/** Of the first `n` records, those whose listener predict (under `key`) gives as the kernel did, and those it does not. */
function handCount(n: number, key: string): { agreed: number; differs: number[] } {
  const g = trace.group;
  const args = ['predict', '--kernel', trace.kernel.profile, '--proto', g.proto, '--listeners', String(g.listeners), '--secret', key];
  args.push('--bind', `${g.bind}:${g.port}`, '--closed', g.closed.join(','));
  const recs = trace.events.slice(0, n);
  const out = execFileSync(AGENT, args, { input: recs.map((e) => `${e.saddr} ${e.sport} ${e.daddr} ${e.dport}`).join('\n'), encoding: 'utf8' });
  const model = out
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { listener: number | null }).listener);
  const differs = recs.flatMap((e, i) => (model[i] === e.listener ? [] : [i]));
  return { agreed: n - differs.length, differs };
}

/** Steps until `n` records are sent (three events each: SYN, SYN-ACK, ACK). */
async function sendRecords(page: Page, n: number) {
  const fwd = page.getByRole('button', { name: 'Step forward' });
  for (let i = 0; i < 3 * n; i++) await fwd.click();
  // The page writes the record count with its digit groups (1,000).
  await expect(page.locator('.rl-dv-replay')).toContainText(`${n} of ${trace.events.length.toLocaleString('en')} records sent`);
}

test('a measured trace replays record by record; the agreement the page counts is the hand count from the file', async ({ page }) => {
  await page.goto(`./dispatch/?replay=${FILE}&autoplay=false`);
  await expect(page.locator('reuseport-dispatch .rl-dv')).toBeVisible();
  await expect(page.locator('.rl-dv-replay')).toContainText(`Replaying ${FILE}`);
  // The scene is the trace's group: 8 listeners with 1 and 5 closed.
  await expect(page.locator('.rl-dv-summary')).toContainText('6 listening members');
  const n = 15;
  await sendRecords(page, n);
  const want = handCount(n, manifestKey);
  await expect(page.locator('.rl-dv-replay')).toContainText(`the model agrees on ${want.agreed} and differs on ${want.differs.length}`);
  // Each SYN row is the record's client and the kernel's listener.
  const rows = await page
    .locator('.rl-dv-events tbody tr:not([hidden])')
    .evaluateAll((trs) => trs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  const syns = rows.filter((r) => r[1] === 'SYN');
  expect(syns.length).toBeGreaterThan(0);
  for (const r of syns) {
    const rec = trace.events.find((e) => `${e.saddr}:${e.sport}` === r[2])!;
    expect(r[4]).toBe(`L${rec.listener}`);
    expect(r[7]).toContain('kernel’s choice');
  }
});

test('under a wrong key the records the model differs on are counted and listed, not hidden', async ({ page }) => {
  const key = '0x12345678';
  await page.goto(`./dispatch/?replay=${FILE}&secret=${key}&autoplay=false`);
  await expect(page.locator('.rl-dv-replay')).toContainText(`Replaying ${FILE}`);
  const n = 10;
  await sendRecords(page, n);
  const want = handCount(n, key);
  expect(want.differs.length, 'a wrong key moves some records').toBeGreaterThan(0);
  await expect(page.locator('.rl-dv-replay')).toContainText(`Under key ${key} the model agrees on ${want.agreed} and differs on ${want.differs.length}`);
  await expect(page.locator('.rl-dv-replay-differs')).toContainText(want.differs.slice(0, 20).join(', '));
});

test('the trace viewer links a measured trace to its replay, in both languages', async ({ page }) => {
  for (const [path, link] of [
    ['./traces/', 'Replay it in the visualizer'],
    ['./zh-cn/traces/', '在可视化工具中重放它'],
  ] as const) {
    await page.goto(`${path}?trace=${FILE}`);
    await page.getByRole('link', { name: new RegExp(link) }).click();
    await expect(page).toHaveURL(new RegExp(`dispatch/\\?replay=${FILE.replace(/\./g, '\\.')}`));
    await expect(page.locator('.rl-dv-replay')).toContainText(FILE);
  }
});

test('a replay parameter that is not a file name is refused by name, and the scene runs as usual', async ({ page }) => {
  await page.goto('./dispatch/?replay=../etc/passwd&autoplay=false');
  await expect(page.locator('.rl-errors')).toContainText('replay=../etc/passwd');
  await expect(page.locator('.rl-dv-replay')).toBeHidden();
});
