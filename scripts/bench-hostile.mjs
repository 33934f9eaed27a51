#!/usr/bin/env node
// How long the main thread's longest task lasts on the pages of tests/e2e/hostile-urls.spec.ts (hostile and extreme
// URL values), on the production build served by `astro preview`, in headless Chromium. The tests check behaviour
// (the value is named, the defaults run, frames keep coming, long work is sliced); the times are this benchmark's:
//   - each page, after it has loaded and had a second to settle: the longest task and the frames drawn over 3 s;
//   - the one-connection widget with 1,000,000 listeners on 4.4 answering 200 lines: the time, the longest task
//     meanwhile and the frames drawn.
// A task over 200 ms is marked (the bound the tests once asserted). Prints numbers; never fails on time.
// Usage: node scripts/bench-hostile.mjs [--no-build] [--dist DIR]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { DISPATCH_CASES, LOOKUP_LINES, LOOKUP_MILLION } from '../tests/e2e/hostile-cases.mjs';
import { CHROMIUM_ARGS, servePreview } from './bench-util.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({ options: { 'no-build': { type: 'boolean' }, dist: { type: 'string', default: 'dist' } } });
if (!opts['no-build']) execFileSync('npx', ['astro', 'build', '--silent', '--outDir', opts.dist], { cwd: root, stdio: 'inherit' });

const LONG = 200;
const PAGES = [
  ...DISPATCH_CASES.map(([query]) => [`dispatch/?${query.slice(0, 40)}`, `dispatch/?${query}`]),
  ['lookup/ listeners=1000000 on 4.4', 'lookup/?kernel=4.4&listeners=1000000&text=10.0.0.2%2040000%2010.0.0.1%208080'],
  ['embed/lookup/ 1,000,000 listeners on 4.4', LOOKUP_MILLION],
  ['embed/dispatch/ hostile rate and listeners', `embed/dispatch/?rate=1000000000&listeners=${'9'.repeat(100)}`],
];

/** Every long task of the page from its start, in window.__long. */
const watch = () => {
  window.__long = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) window.__long.push({ start: e.startTime, ms: e.duration });
  }).observe({ type: 'longtask', buffered: true });
};
/** The longest task that started at or after `since` (ms of the page's clock), 0 when none was long (over 50 ms). */
const longestSince = (page, since) => page.evaluate((t0) => Math.max(0, ...window.__long.filter((t) => t.start >= t0).map((t) => t.ms)), since);
/** Frames drawn in `ms`. */
const frames = (page, ms) =>
  page.evaluate(
    (span) =>
      new Promise((done) => {
        let n = 0;
        const t0 = performance.now();
        const f = () => {
          if (performance.now() - t0 >= span) return done(n);
          n++;
          requestAnimationFrame(f);
        };
        requestAnimationFrame(f);
      }),
    ms,
  );
const mark = (ms) => `${ms.toFixed(0).padStart(6)} ms${ms > LONG ? ' *' : '  '}`;

const { base, stop } = await servePreview(root, '/', opts.dist);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  console.log('longest main-thread task after load (a second to settle, then 3 s) and frames in those 3 s;');
  console.log(`0 ms: no task over 50 ms (the long-task threshold); * over ${LONG} ms`);
  for (const [name, path] of PAGES) {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.addInitScript(watch);
    await page.goto(`${base}/${path}`, { waitUntil: 'load' });
    await page.waitForTimeout(1000);
    const since = await page.evaluate(() => performance.now());
    const drawn = await frames(page, 3000);
    console.log(`  ${name.padEnd(52)} ${mark(await longestSince(page, since))} ${String(drawn).padStart(4)} frames`);
    await page.close();
  }

  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript(watch);
  await page.goto(`${base}/${LOOKUP_MILLION}`);
  const w = page.locator('reuseport-lookup');
  await w.getByRole('status').filter({ hasText: '1 line explained.' }).waitFor({ timeout: 120_000 });
  await w.getByLabel('4-tuples').fill(LOOKUP_LINES);
  const since = await page.evaluate(() => {
    window.__frames = 0;
    window.__busy = true;
    const f = () => {
      if (!window.__busy) return;
      window.__frames++;
      requestAnimationFrame(f);
    };
    requestAnimationFrame(f);
    return performance.now();
  });
  await w.getByRole('button', { name: 'Explain' }).click();
  await w.getByRole('status').filter({ hasText: '200 lines explained.' }).waitFor({ timeout: 600_000 });
  const r = await page.evaluate(() => {
    window.__busy = false;
    return { ms: performance.now(), frames: window.__frames };
  });
  console.log('200 lines, 1,000,000 listeners on 4.4 (the one-connection widget, answered a slice at a time)');
  console.log(`  ${(r.ms - since).toFixed(0)} ms in all, longest task ${mark(await longestSince(page, since)).trim()}, ${r.frames} frames drawn meanwhile`);
} finally {
  await browser.close();
  stop();
}
