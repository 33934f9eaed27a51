/**
 * The scenario gallery's widget on its pages: every variant of the curated
 * scenario gets a card with the model's figures, a bad control value is
 * refused by name, and a new run replaces the cards. The figures themselves
 * are pinned by the model's tests (wasm/model/tests/suite/sim.rs); this checks the
 * page shows them.
 */
import { axe } from './axe';
import { expect, test } from '@playwright/test';

test('a stalled worker: three cards, and only the reuseport one drops SYNs', async ({ page }) => {
  await page.goto('./scenarios/stalled-worker/');
  const w = page.locator('reuseport-scenario');
  await w.scrollIntoViewIfNeeded();
  await expect(w.locator('.rl-sc-card')).toHaveCount(3, { timeout: 30_000 });
  await expect(w).toHaveAttribute('data-state', 'ready');
  const reuse = w.locator('.rl-sc-card', { hasText: 'SO_REUSEPORT, a listener per worker' });
  const drops = reuse.locator('tr', { hasText: 'SYNs dropped on a full queue' }).locator('td').first();
  expect(Number((await drops.textContent())!.replace(/,/g, ''))).toBeGreaterThan(100);
  await expect(w.locator('.rl-sc-card', { hasText: 'EPOLLEXCLUSIVE' }).locator('tr', { hasText: 'SYNs dropped' })).toHaveCount(0);
  // This machine's recording stands beside the simulation, with the calibration's agreement figures.
  await expect(reuse.locator('.rl-sc-figures thead')).toContainText('Measured');
  await expect(reuse.locator('.rl-sc-ran')).toContainText('Measured on this machine (Linux');
  // A verdict per measure: the stalled-worker reuseport run's shares agree (0.29 points), its latency, recorded on a
  // saturated machine, does not, and the card says why (calibration.json).
  const [shares, latency] = [reuse.locator('.rl-sc-agree').nth(0), reuse.locator('.rl-sc-agree').nth(1)];
  await expect(shares).toContainText(/^Shares agree with the simulator on the same workload: [\d.]+ percentage points apart per worker/);
  await expect(shares).toHaveClass(/rl-sc-yes/);
  await expect(latency).toContainText(/^Latency differs: p50, p90 and p99 are \d+% apart on average/);
  await expect(latency).toContainText('saturated the 2-CPU machine');
  await expect(latency).toHaveClass(/rl-sc-no/);
  await expect(reuse).not.toContainText('disagree');
  // Every chart has its numbers as a table too.
  await expect(reuse.locator('details table tbody tr')).toHaveCount(4);
  await expect(reuse.locator('details table thead')).toContainText('Measured');
  const r = await axe(page).include('reuseport-scenario').analyze();
  expect(r.violations.map((v) => v.id)).toEqual([]);
});

test('a load out of range is refused by name; a valid one runs again', async ({ page }) => {
  await page.goto('./scenarios/six-connections/');
  const w = page.locator('reuseport-scenario');
  await w.scrollIntoViewIfNeeded();
  await expect(w.locator('.rl-sc-card')).toHaveCount(4, { timeout: 30_000 });
  const load = w.getByLabel('Load ×');
  await load.fill('9');
  await w.getByRole('button', { name: 'Run again' }).click();
  await expect(w.getByRole('alert')).toContainText('Load must be a number from 0.1 to 4');
  await expect(load).toHaveAttribute('aria-invalid', 'true');
  await load.fill('2');
  const events: string[] = [];
  await page.exposeFunction('seen', (k: string) => events.push(k));
  await page.evaluate(() => {
    for (const k of ['started', 'completed']) document.addEventListener(`reuseport:${k}`, () => (window as unknown as { seen: (k: string) => void }).seen(k));
  });
  await w.getByRole('button', { name: 'Run again' }).click();
  await expect.poll(() => events).toEqual(['started', 'completed']);
  await expect(w.getByRole('alert')).toBeHidden();
  await expect(w.locator('.rl-sc-card')).toHaveCount(4);
  // Blocking accept still takes turns at twice the rate: 2, 2, 2.
  const blocking = w.locator('.rl-sc-card', { hasText: 'blocking accept()' });
  await expect(blocking.locator('details tbody td')).toHaveText(['2', '2', '2']);
});

test('the Chinese page runs the same scenario with Chinese labels', async ({ page }) => {
  await page.goto('./zh-cn/scenarios/reload/');
  const w = page.locator('reuseport-scenario');
  await w.scrollIntoViewIfNeeded();
  await expect(w.locator('.rl-sc-card')).toHaveCount(3, { timeout: 30_000 });
  await expect(w.locator('.rl-sc-card').first()).toContainText('被重置的连接');
  await expect(w.locator('.rl-sc-card', { hasText: '开启 tcp_migrate_req' })).toContainText('经 tcp_migrate_req 迁移的连接');
});

test('which scenario looks like mine: six to one of three ranks EPOLLEXCLUSIVE first; a bad count is named', async ({ page }) => {
  await page.goto('./scenarios/');
  const w = page.locator('reuseport-scenario-match');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready');
  const counts = w.getByLabel('Connections per worker');
  await counts.fill('6 x 0');
  await w.getByRole('button', { name: 'Find similar scenarios' }).click();
  await expect(w.getByRole('alert')).toContainText('Count 2 (“x”) is not a whole number');
  await expect(counts).toHaveAttribute('aria-invalid', 'true');
  await counts.fill('6, 0, 0');
  await w.getByRole('button', { name: 'Find similar scenarios' }).click();
  const first = w.locator('.rl-scm-list > li').first();
  await expect(first).toContainText('Six connections, three workers', { timeout: 60_000 });
  await expect(first).toContainText('EPOLLEXCLUSIVE');
  await expect(w.locator('.rl-scm-list > li')).toHaveCount(5);
  await first.getByRole('link').click();
  await expect(page).toHaveURL(/\/scenarios\/six-connections\/$/);
});

test('long-lived connections: where both counts of wasted wake-ups show, the card says they count different things', async ({ page }) => {
  await page.goto('./scenarios/long-lived-favourite/');
  const w = page.locator('reuseport-scenario');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  const epoll = w.locator('.rl-sc-card', { has: page.locator('h3', { hasText: /^Shared socket, epoll$/ }) });
  const row = epoll.locator('tr', { hasText: 'Wake-ups that found nothing' }).locator('td');
  expect(Number((await row.nth(0).textContent())!.replace(/,/g, ''))).toBeGreaterThan(Number((await row.nth(1).textContent())!.replace(/,/g, '')));
  await expect(epoll.locator('.rl-sc-wasted')).toContainText('the kernel checks the socket again before epoll_wait() returns');
  await expect(epoll.locator('.rl-sc-wasted')).toContainText('The measured count is a floor.');
});
