import { execFileSync } from 'node:child_process';
import { axe } from './axe';
import { expect, test, type Page } from '@playwright/test';
import { AGENT } from '../agent';

// kernel-history.md §1.5: secret 0x12345678 + mix 0x9abcdef0 = 0xacf13568.
const REF = '127.0.0.9 40000 127.0.0.1 8080';

/** The one-connection widget at the foot of the lookup page (the paste analyser above has fields of the same names). */
const one = (page: Page) => page.locator('reuseport-lookup');

async function fill(page: Page, o: { tuples: string; kernel: string; listeners?: number; secret?: string; closed?: string; proto?: string }) {
  const w = one(page);
  await w.scrollIntoViewIfNeeded();
  await w.getByLabel('4-tuples').fill(o.tuples);
  await w.getByLabel('Kernel', { exact: true }).fill(o.kernel);
  if (o.proto) await w.getByLabel('Protocol').selectOption(o.proto);
  await w.getByLabel('Listeners', { exact: true }).fill(String(o.listeners ?? 8));
  await w.getByLabel('Hash secret (IPv4)').fill(o.secret ?? '0xacf13568');
  await w.getByLabel('Closed listeners').fill(o.closed ?? '');
  await w.getByRole('button', { name: 'Explain' }).click();
}

function answerRows(page: Page) {
  return one(page).getByRole('table', { name: 'Chosen socket per line' }).locator('tbody tr');
}

test('the reference connection lands on listener 6 on 6.18 and 4 on 6.12', async ({ page }) => {
  await page.goto('./lookup/');
  await one(page).scrollIntoViewIfNeeded();
  await expect(page.locator('reuseport-lookup .rl-lookup')).toBeVisible();
  await fill(page, { tuples: REF, kernel: '6.18' });
  await expect(answerRows(page).first()).toContainText('c3b545b8');
  await expect(answerRows(page).first().locator('td').nth(2)).toHaveText('6');
  await fill(page, { tuples: REF, kernel: '6.12' });
  await expect(answerRows(page).first()).toContainText('8c07df78');
  await expect(answerRows(page).first().locator('td').nth(2)).toHaveText('4');
  // The one explanation is open and shows the words fed to jhash.
  await expect(one(page).getByText('1f90409c').first()).toBeVisible();
});

test('a bad line is reported with its number and field while the others are answered', async ({ page }) => {
  await page.goto('./lookup/');
  await fill(page, { tuples: `${REF}\n127.0.0.9 99999 127.0.0.1 8080\n127.0.0.10 40001 127.0.0.1 8080`, kernel: '6.18' });
  await expect(one(page).getByRole('alert')).toContainText('Line 2: source port `99999`');
  await expect(answerRows(page)).toHaveCount(2);
});

test('on the Chinese page a bad line is said in Chinese, with its number and field', async ({ page }) => {
  // The model's tuple-parse error crossed the wasm boundary as an English sentence, and the Chinese page showed it.
  await page.goto('./zh-cn/lookup/');
  const w = one(page);
  await w.scrollIntoViewIfNeeded();
  await w.getByLabel('四元组').fill(`${REF}\n127.0.0.9 99999 127.0.0.1 8080\n127.0.0.10 40001 127.0.0.1 8080\n127.0.0.11 40002 ::1 8080`);
  await w.getByLabel('内核', { exact: true }).fill('6.18');
  await w.getByLabel('监听套接字数', { exact: true }).fill('8');
  await w.getByLabel('哈希密钥（IPv4）').fill('0xacf13568');
  await w.getByRole('button', { name: '解释' }).click();
  const alert = w.getByRole('alert');
  await expect(alert).toContainText('第 2 行：');
  await expect(alert).toContainText('源端口 `99999`');
  await expect(alert).toContainText('不是端口号（0 到 65535）');
  await expect(alert).toContainText('第 4 行：');
  await expect(alert).toContainText('混用了 IPv4 和 IPv6');
  await expect(alert).not.toContainText('source port');
  await expect(alert).not.toContainText(' is not ');
  await expect(w.getByRole('table', { name: '每行选中的套接字' }).locator('tbody tr')).toHaveCount(2);
});

test('an impossible group is refused with the kernel reason', async ({ page }) => {
  await page.goto('./lookup/');
  await fill(page, { tuples: REF, kernel: '6.18', listeners: 32769 });
  await expect(one(page).getByRole('alert')).toContainText('ENOMEM');
});

test('the page answers exactly as reuseport-agent predict', async ({ page }) => {
  const lines = Array.from({ length: 40 }, (_, i) => `127.0.${i % 7}.${((i * 37) % 250) + 2} ${33000 + i * 101} 127.0.0.1 8080`);
  const cases = [
    { kernel: '6.18', proto: 'tcp', listeners: 12, closed: '3,0' },
    { kernel: '4.4', proto: 'tcp', listeners: 5, closed: '' },
    { kernel: '5.10', proto: 'udp', listeners: 130, closed: '129,1' },
  ];
  await page.goto('./lookup/');
  for (const c of cases) {
    const args = ['predict', '--kernel', c.kernel, '--proto', c.proto, '--listeners', String(c.listeners), '--secret', '0x5eed1234'];
    if (c.closed) args.push('--closed', c.closed);
    const out = execFileSync(AGENT, args, { input: lines.join('\n'), encoding: 'utf8' });
    const want = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { listener: number | null; hash: string });
    await fill(page, { tuples: lines.join('\n'), kernel: c.kernel, proto: c.proto, listeners: c.listeners, secret: '0x5eed1234', closed: c.closed });
    await expect(answerRows(page)).toHaveCount(lines.length);
    const got = await answerRows(page).evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    expect(got.map((r) => [r[2], `0x${r[4]}`])).toEqual(want.map((w) => [String(w.listener), w.hash]));
  }
});

test('the form works from the keyboard alone', async ({ page }) => {
  await page.goto('./lookup/');
  await one(page).scrollIntoViewIfNeeded();
  await one(page).getByLabel('4-tuples').fill('127.0.0.9 40000 127.0.0.1 8080');
  await one(page).getByLabel('Hash secret (IPv4)').fill('0xacf13568');
  await one(page).getByLabel('Kernel', { exact: true }).fill('6.18');
  await one(page).getByLabel('Kernel', { exact: true }).press('Enter');
  await expect(answerRows(page).first().locator('td').nth(2)).toHaveText('6');
});

test('the page has no axe violations, with results shown', async ({ page }) => {
  await page.goto('./lookup/');
  await fill(page, { tuples: `${REF}\n127.0.0.9 99999 127.0.0.1 8080`, kernel: '3.9' });
  await expect(answerRows(page)).toHaveCount(1);
  const results = await axe(page).analyze();
  expect(results.violations).toEqual([]);
});
