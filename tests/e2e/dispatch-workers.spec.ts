import { axe } from './axe';
import { expect, test, type Page } from '@playwright/test';

// Workers behind the listeners (service rates, stalls) and the guided tour of the dispatch visualizer.
// The scene is run on through its test hook (simulated seconds, not wall-clock time), so nothing here
// depends on how fast the machine is.

type Row = { worker: string; rate: string; sent: number; accepted: number; queued: number };

/** Runs the scene `s` simulated seconds (in 0.1 s steps) and lets the page redraw its figures. */
async function run(page: Page, s: number) {
  await page.waitForFunction(() => !!(document.querySelector('reuseport-dispatch') as unknown as { __dispatch?: unknown } | null)?.__dispatch);
  await page.evaluate((s) => {
    const d = (document.querySelector('reuseport-dispatch') as unknown as { __dispatch: { sim: { advance: (dt: number) => void } } }).__dispatch;
    for (let i = 0; i < s * 10; i++) d.sim.advance(0.1);
  }, s);
  // A step redraws the table, the figures and the summary at once.
  await page.getByRole('button', { name: 'Step forward' }).click();
}

/** The workers table, by worker. */
async function workers(page: Page): Promise<Record<string, Row>> {
  const rows = await page.locator('.rl-dv-workers tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent ?? '')));
  return Object.fromEntries(
    rows.map(([worker, rate, sent, accepted, queued]) => [
      worker!,
      { worker: worker!, rate: rate!, sent: Number(sent), accepted: Number(accepted), queued: Number(queued) },
    ]),
  );
}

/** The class of the element that has focus inside the widget's shadow root. */
const focused = (page: Page) =>
  page.evaluate(() => (document.querySelector('reuseport-dispatch')!.shadowRoot!.activeElement as HTMLElement | null)?.className ?? null);

/** The colour of the canvas pixel at (x, y) CSS pixels, as #rrggbb, or 'unpainted'. */
const pixel = (page: Page, x: number, y: number) =>
  page.evaluate(
    ([x, y]) => {
      const c = document.querySelector('reuseport-dispatch')!.shadowRoot!.querySelector('canvas')!;
      const s = c.width / c.getBoundingClientRect().width;
      const d = c.getContext('2d')!.getImageData(Math.round(x! * s), Math.round(y! * s), 1, 1).data;
      return d[3] === 0 ? 'unpainted' : `#${[d[0], d[1], d[2]].map((v) => v!.toString(16).padStart(2, '0')).join('')}`;
    },
    [x, y],
  );

/** A box relative to the canvas. */
async function inCanvas(page: Page, selector: string) {
  return page.evaluate((sel) => {
    const root = document.querySelector('reuseport-dispatch')!.shadowRoot!;
    const c = root.querySelector('canvas')!.getBoundingClientRect();
    const r = root.querySelector(sel)!.getBoundingClientRect();
    return { x: r.left - c.left, y: r.top - c.top, w: r.width, h: r.height };
  }, selector);
}
const contains = (outer: { x: number; y: number; w: number; h: number }, inner: { x: number; y: number; w: number; h: number }) =>
  outer.x <= inner.x + 0.5 && outer.y <= inner.y + 0.5 && inner.x + inner.w <= outer.x + outer.w + 0.5 && inner.y + inner.h <= outer.y + outer.h + 0.5;

test('a stalled worker’s queue grows while the others’ stay bounded; the scene, the table, the figures and the summary say so', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7&clients=2000&rate=80');
  const stall = page.getByRole('button', { name: 'Stall worker L3' });
  await stall.click();
  await expect(stall).toHaveAttribute('aria-pressed', 'true');
  await run(page, 30);
  const a = await workers(page);
  await run(page, 30);
  const b = await workers(page);
  expect(b.L3!.rate).toBe('stalled');
  expect(b.L3!.accepted, 'a stalled worker accepts nothing').toBe(0);
  expect(b.L3!.sent - a.L3!.sent, 'the hash keeps sending it its share').toBeGreaterThan(200);
  expect(b.L3!.queued, 'its queue grew between 30 s and 60 s').toBeGreaterThan(a.L3!.queued + 200);
  for (const w of Object.values(b).filter((w) => w.worker !== 'L3')) {
    expect(w.queued, `${w.worker}'s queue stays short`).toBeLessThan(25);
    expect(w.accepted, `${w.worker} works`).toBeGreaterThan(200);
  }
  await expect(page.locator('.rl-dv-summary')).toContainText('worker L3 stalled');
  await expect(page.locator('.rl-dv-figures')).toContainText(`L3: ${b.L3!.queued}`);
  await expect(page.locator('.rl-dv-overlay .rl-dv-stalled .rl-dv-listener-label')).toHaveText('L3 ×0');
  // The queue bar beside a stalled worker is drawn in its own dark red, and it is the longest.
  const at = await page.evaluate(() => {
    const d = (document.querySelector('reuseport-dispatch') as unknown as { __dispatch: { columns: () => Record<string, number> } }).__dispatch;
    const root = document.querySelector('reuseport-dispatch')!.shadowRoot!;
    const c = root.querySelector('canvas')!.getBoundingClientRect();
    const ys = [3, 4].map((l) => {
      const r = root.querySelector(`.rl-dv-stall[data-listener="${l}"]`)!.getBoundingClientRect();
      return r.top + r.height / 2 - c.top;
    });
    return { x: d.columns().listener! + 72, ys };
  });
  expect(await pixel(page, at.x + 1, at.ys[0]!), 'L3’s queue bar starts in dark red').toBe('#a00000');
  expect(await pixel(page, at.x + 41, at.ys[0]!), 'L3’s queue bar is long').toBe('#a00000');
  expect(await pixel(page, at.x + 41, at.ys[1]!), 'L4’s queue bar is short next to it').toBe('unpainted');
  // Resumed from the keyboard, it works its queue down.
  await stall.focus();
  await page.keyboard.press('Enter');
  await expect(stall).toHaveAttribute('aria-pressed', 'false');
  await run(page, 60);
  const c = await workers(page);
  expect(c.L3!.rate).toBe('normal');
  expect(c.L3!.accepted).toBeGreaterThan(100);
  expect(c.L3!.queued).toBeLessThan(b.L3!.queued);
});

test('a slow worker’s queue grows faster than a normal one’s; rates come from the attribute and from Settings', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7&clients=2000&rate=80&rates=1,1,0.25');
  await run(page, 40);
  const w = await workers(page);
  expect(w.L2!.rate).toBe('×0.25');
  const normal = Math.max(
    ...Object.values(w)
      .filter((r) => r.worker !== 'L2')
      .map((r) => r.queued),
  );
  expect(w.L2!.queued, 'the slow worker’s queue is the longest by far').toBeGreaterThan(normal + 100);
  expect(w.L2!.accepted, 'it still works, slowly').toBeGreaterThan(50);
  await expect(page.locator('.rl-dv-overlay .rl-dv-row[data-listener="2"] .rl-dv-listener-label')).toHaveText('L2 ×0.25');
  await expect(page.locator('.rl-dv-summary')).toContainText('worker L2 at 0.25× rate');
  // Settings: the service rate of the listener chosen there, and its own stall toggle.
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Listener', { exact: true }).selectOption('5');
  await page.getByLabel('Service rate (× normal)').fill('0.5');
  await page.getByRole('button', { name: 'Set rate' }).click();
  await page.getByRole('button', { name: 'Stall worker', exact: true }).click();
  await expect(page.getByRole('button', { name: 'Resume worker', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByRole('button', { name: 'Stall worker L5' })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Resume worker', exact: true }).click();
  await run(page, 40);
  const v = await workers(page);
  expect(v.L5!.rate).toBe('×0.5');
  expect(v.L5!.queued).toBeGreaterThan(Math.max(...['L0', 'L1', 'L3'].map((k) => v[k]!.queued)) + 40);
});

test('a bad rates value is refused by name, with its bounds, and every worker keeps the normal rate', async ({ page }) => {
  for (const [value, says] of [
    ['1,9,1', 'entry 2, "9"'],
    ['fast', 'entry 1, "fast"'],
    ['1,0', 'entry 2, "0"'],
  ] as const) {
    await page.goto(`./dispatch/?autoplay=false&rates=${value}`);
    const alert = page.locator('reuseport-dispatch .rl-errors');
    await expect(alert).toContainText(`rates=${value} was not used`);
    await expect(alert).toContainText('from 0.1 to 4');
    await expect(alert).toContainText(says);
    expect(Object.values(await workers(page)).map((w) => w.rate)).toEqual(Array(8).fill('normal'));
  }
  // The Settings field is checked by the same bounds.
  await page.getByLabel('Service rate (× normal)').fill('7');
  await page.getByRole('button', { name: 'Set rate' }).click();
  await expect(page.locator('reuseport-dispatch .rl-errors')).toHaveText('Service rate: give a number from 0.1 to 4.');
});

test('the stall toggles follow the Settings button in the tab order, and a restart clears the stalls', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await page.getByRole('button', { name: 'Settings' }).focus();
  await page.keyboard.press('Tab');
  expect(await focused(page)).toBe('rl-dv-stall');
  await page.keyboard.press('Space');
  await expect(page.getByRole('button', { name: 'Stall worker L0' })).toHaveAttribute('aria-pressed', 'true');
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(page.getByRole('button', { name: 'Stall worker L0' })).toHaveAttribute('aria-pressed', 'false');
});

/** Where the stage sits in the widget, and its size: what a close must leave as it was. */
const geometry = (page: Page) =>
  page.evaluate(() => {
    const root = document.querySelector('reuseport-dispatch')!.shadowRoot!;
    const w = root.querySelector('.rl-dv')!.getBoundingClientRect();
    // The canvas, not the stage: the line of words under the scene follows the focused packet.
    const s = root.querySelector('.rl-dv-canvas')!.getBoundingClientRect();
    const side = root.querySelector('.rl-dv-side')!.getBoundingClientRect();
    return { canvas: [s.left - w.left, s.top - w.top, s.width, s.height], side: [side.left - w.left, side.top - w.top, side.width] };
  });

test('the tour pauses, steps forward and back highlighting each part, closes on Escape with focus back on its button, and leaves the layout as it was', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto('./dispatch/?seed=7');
  await expect(page.getByRole('button', { name: 'Pause' })).toBeVisible();
  await page.locator('.rl-dv-stage').scrollIntoViewIfNeeded();
  const before = await geometry(page);
  // The highlight moves to each part in 0.25 s (a CSS transition): each check waits for it to arrive.
  await page.getByRole('button', { name: 'Take the tour' }).click();
  const tour = page.getByRole('region', { name: 'Tour of the scene' });
  await expect(tour).toBeVisible();
  await expect(page.getByRole('button', { name: 'Play' }), 'the tour pauses the animation').toHaveAttribute('aria-pressed', 'false');
  expect(await focused(page), 'focus goes to the tour’s words').toBe('rl-dv-tour-text');
  const spot = page.locator('.rl-dv-spot');
  const next = tour.getByRole('button', { name: 'Next' });

  await expect(tour).toContainText('Step 1 of 6');
  await expect(tour).toContainText('The hash');
  await expect(spot).toHaveAttribute('data-part', 'hash');
  await expect
    .poll(async () => contains(await inCanvas(page, '.rl-dv-spot'), await inCanvas(page, '.rl-dv-marker')), {
      message: 'the hash marker is inside the highlight',
    })
    .toBe(true);
  // The numbers the tour gives are the model's, as the line under the scene shows them.
  const line = (await page.locator('.rl-dv-stage-line').innerText()).match(/hash (0x[0-9a-f]{8}) × (\d+) = (0x[0-9a-f]+), >> 32 = slot (\d+) → L(\d+)/)!;
  expect(line, 'the line under the scene names the SYN’s numbers').not.toBeNull();
  const [, hash, n, product, slot, listener] = line;
  await expect(tour).toContainText(hash!);

  await next.click();
  await expect(tour).toContainText('Step 2 of 6');
  await expect(spot).toHaveAttribute('data-part', 'slot');
  await expect(tour).toContainText(`${hash} × ${n} = ${product}, >> 32 = ${slot}`);
  await expect
    .poll(async () => contains(await inCanvas(page, '.rl-dv-spot'), await inCanvas(page, `.rl-dv-row[data-slot="${slot}"] .rl-dv-slot`)), {
      message: 'the chosen slot is inside the highlight',
    })
    .toBe(true);

  await next.click();
  await expect(tour).toContainText('Step 3 of 6');
  await expect(spot).toHaveAttribute('data-part', 'socks');
  for (const s of ['0', '7'])
    await expect
      .poll(async () => contains(await inCanvas(page, '.rl-dv-spot'), await inCanvas(page, `.rl-dv-row[data-slot="${s}"] .rl-dv-slot`)), {
        message: `socks[${s}] is inside the highlight`,
      })
      .toBe(true);

  await next.click();
  await expect(tour).toContainText('Step 4 of 6');
  await expect(spot).toHaveAttribute('data-part', 'listener');
  await expect(tour).toContainText(`L${listener} takes the SYN`);
  await expect
    .poll(async () => contains(await inCanvas(page, '.rl-dv-spot'), await inCanvas(page, `.rl-dv-row[data-listener="${listener}"] .rl-dv-listener`)), {
      message: 'the chosen listener is inside the highlight',
    })
    .toBe(true);

  // Back and forward again.
  await tour.getByRole('button', { name: 'Back' }).click();
  await expect(tour).toContainText('Step 3 of 6');
  await expect(spot).toHaveAttribute('data-part', 'socks');
  await next.click();
  await expect(tour).toContainText('Step 4 of 6');

  await next.click();
  await expect(tour).toContainText('Step 5 of 6');
  await expect(spot).toHaveAttribute('data-part', 'queue');
  await expect(tour).toContainText(`L${listener}'s accept queue`);

  await next.click();
  await expect(tour).toContainText('Step 6 of 6');
  await expect(spot).toHaveAttribute('data-part', 'stalled');
  const stall = page.getByRole('button', { name: `Stall worker L${listener}` });
  await expect(stall, 'the last step stalls the chosen listener’s worker').toHaveAttribute('aria-pressed', 'true');
  await expect
    .poll(async () => contains(await inCanvas(page, '.rl-dv-spot'), await inCanvas(page, `.rl-dv-stall[data-listener="${listener}"]`)), {
      message: 'the stalled worker’s toggle is inside the highlight',
    })
    .toBe(true);
  const queued = Number((await tour.innerText()).match(/\((\d+) waiting/)![1]);
  expect(queued, 'its queue has grown').toBeGreaterThan(5);
  await expect(tour.getByRole('button', { name: 'Done' })).toBeVisible();

  await page.keyboard.press('Escape');
  await expect(tour).toBeHidden();
  await expect(spot).toBeHidden();
  expect(await focused(page), 'focus returns to the tour button').toBe('rl-dv-tour-btn');
  await expect(page.getByRole('button', { name: 'Take the tour' })).toHaveAttribute('aria-expanded', 'false');
  await expect(stall, 'the worker the tour stalled works again').toHaveAttribute('aria-pressed', 'false');
  await expect(page.getByRole('button', { name: 'Pause' }), 'it plays again, as it did before the tour').toBeVisible();
  expect(await geometry(page), 'the layout is as it was').toEqual(before);
});

test('the page has no axe violations with the tour open', async ({ page }) => {
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await page.getByRole('button', { name: 'Take the tour' }).click();
  const tour = page.getByRole('region', { name: 'Tour of the scene' });
  for (let i = 0; i < 5; i++) await tour.getByRole('button', { name: 'Next' }).click();
  await expect(tour).toContainText('Step 6 of 6');
  const results = await axe(page).analyze();
  expect(results.violations).toEqual([]);
});

test('at 390×844 each step shows the tour’s words and the highlighted part on screen together, and nothing is wider than the screen', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('./dispatch/?autoplay=false&seed=7');
  await page.getByRole('button', { name: 'Take the tour' }).click();
  const tour = page.getByRole('region', { name: 'Tour of the scene' });
  for (let i = 1; i <= 6; i++) {
    await expect(tour).toContainText(`Step ${i} of 6`);
    // Polled: the highlight moves to its part in 0.25 s.
    const seen = () =>
      page.evaluate(() => {
        const root = document.querySelector('reuseport-dispatch')!.shadowRoot!;
        const on = (sel: string) => {
          const r = root.querySelector(sel)!.getBoundingClientRect();
          return r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
        };
        return { text: on('.rl-dv-tour-text'), spot: on('.rl-dv-spot'), wide: document.documentElement.scrollWidth };
      });
    await expect.poll(seen, { message: `step ${i}` }).toEqual({ text: true, spot: true, wide: 390 });
    if (i < 6) await tour.getByRole('button', { name: 'Next' }).click();
  }
  await tour.getByRole('button', { name: 'Done' }).click();
  await expect(tour).toBeHidden();
  expect(await focused(page)).toBe('rl-dv-tour-btn');
});

test('with reduced motion the tour’s highlight jumps without a transition', async ({ page }) => {
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.goto('./dispatch/?seed=7');
  await page.getByRole('button', { name: 'Take the tour' }).click();
  await page.getByRole('button', { name: 'Next' }).click();
  const transition = await page.locator('.rl-dv-spot').evaluate((el) => getComputedStyle(el).transitionDuration);
  expect(transition.split(',').every((d) => d.trim() === '0s')).toBe(true);
  await page.getByRole('button', { name: 'Close the tour' }).click();
  await expect(page.getByRole('region', { name: 'Tour of the scene' })).toBeHidden();
});

test('the tour speaks Chinese on the Chinese page', async ({ page }) => {
  await page.goto('./zh-cn/dispatch/?autoplay=false&seed=7');
  await page.getByRole('button', { name: '开始导览' }).click();
  const tour = page.getByRole('region', { name: '场景导览' });
  await expect(tour).toContainText('第 1 步，共 6 步');
  await expect(tour).toContainText('四元组');
  await tour.getByRole('button', { name: '下一步' }).click();
  await expect(tour).toContainText('reciprocal_scale(hash, N) 把哈希乘以 N');
  await page.keyboard.press('Escape');
  await expect(tour).toBeHidden();
  await expect(page.getByRole('button', { name: '卡住工作进程 L0' })).toHaveAttribute('aria-pressed', 'false');
});
