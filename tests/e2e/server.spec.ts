/**
 * "Your server": a pasted `ss -tanpe` of one socket shared by four nginx
 * workers gets the shared-listener verdict, worded in the page's language,
 * with the workers named and the chapter linked. The diagnosis itself is
 * pinned by the model's tests (wasm/model/src/diagnose/) and the scene's
 * (tests/unit/server-view.test.ts); this checks the page shows it.
 */
import { readFileSync } from 'node:fs';
import { axe } from './axe';
import { expect, test } from '@playwright/test';

const fixture = readFileSync('tests/fixtures/server/ss-tanpe-shared.txt', 'utf8');

const LANGS = [
  {
    path: './server/',
    input: /Paste ss -tanpe/,
    go: 'Diagnose',
    verdict: 'One socket is served by several processes (1001, 1002, 1003, 1004)',
    link: 'accept models',
  },
  { path: './zh-cn/server/', input: /粘贴 ss -tanpe/, go: '诊断', verdict: '一个套接字由多个进程（1001, 1002, 1003, 1004）共同服务', link: 'accept 模型' },
];

for (const l of LANGS) {
  test(`${l.path}: a pasted ss -tanpe of a shared listener gets its verdict`, async ({ page }) => {
    await page.goto(l.path);
    const w = page.locator('reuseport-server');
    await w.scrollIntoViewIfNeeded();
    await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
    await w.getByLabel(l.input).fill(fixture);
    await w.getByRole('button', { name: l.go, exact: true }).click();
    await expect(w).toHaveAttribute('data-state', 'diagnosed', { timeout: 30_000 });
    const verdict = w.locator('[data-verdict="shared-listener"]');
    await expect(verdict).toContainText(l.verdict);
    await expect(verdict.getByRole('link', { name: l.link })).toHaveAttribute('href', /accept-models\/$/);
    await expect(w.locator('.rl-srv-sockets tbody tr')).toHaveCount(1);
    await expect(w.locator('.rl-srv-workers svg')).toBeVisible();
    const r = await axe(page).include('reuseport-server').analyze();
    expect(r.violations.map((v) => v.id)).toEqual([]);
  });
}
