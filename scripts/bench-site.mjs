// The built site's size and the trace viewer on a large file. Prints numbers; never fails on time.
// - pages, total size of dist/, and the first-load transfer (gzip) of the front page, a chapter, the
//   dispatch page, and one widget embedded by the embed script in another site's page;
// - a synthetic trace of N events (schema-valid, made from a curated trace) dropped into the viewer:
//   time to the answer, and the longest main-thread task while it loads (the page must not freeze).
// Usage: node scripts/bench-site.mjs [--no-build] [--events 300000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS, numberOption, servePreview } from './bench-util.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({
  options: { 'no-build': { type: 'boolean' }, events: { type: 'string', default: '300000' } },
});
const events = numberOption(opts, 'events', 10_000_000);
if (!opts['no-build']) execFileSync('npx', ['astro', 'build', '--silent'], { cwd: root, stdio: 'inherit' });

function walk(dir) {
  let files = [];
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    files = statSync(p).isDirectory() ? files.concat(walk(p)) : files.concat([p]);
  }
  return files;
}
const files = walk(join(root, 'dist'));
const pages = files.filter((f) => f.endsWith('index.html')).length;
const total = files.reduce((n, f) => n + statSync(f).size, 0);
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(
  `site: ${pages} pages, ${files.length} files, ${kib(total)} in dist/ (of which traces ` +
    `${kib(files.filter((f) => f.includes('/traces/')).reduce((n, f) => n + statSync(f).size, 0))}, search index ` +
    `${kib(files.filter((f) => f.includes('/pagefind/')).reduce((n, f) => n + statSync(f).size, 0))})`,
);

const { base, stop } = await servePreview(root);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  // First load: every response the page fetches before it is idle (widgets in the first screen hydrate), gzipped.
  for (const [name, path] of [
    ['front page', '/'],
    ['chapter (the hash)', '/hash/'],
    ['dispatch page', '/dispatch/'],
    ['one embedded widget (<reuseport-dispatch compact> by the embed script, on another origin)', 'embedded'],
  ]) {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    if (path === 'embedded') {
      await page.route('http://course.test/**', (r) =>
        r.fulfill({
          contentType: 'text/html',
          body:
            `<!doctype html><title>Course</title><p>Lesson</p><script type="module" src="${base}/embed/reuseport-lab.js"></script><reuseport-dispatch ` +
            `compact listeners="8"></reuseport-dispatch>`,
        }),
      );
      await page.route(`${base}/**`, async (r) => {
        const res = await r.fetch();
        await r.fulfill({ response: res, headers: { ...res.headers(), 'access-control-allow-origin': '*' } });
      });
    }
    const bodies = [];
    page.on('response', async (r) => {
      try {
        bodies.push({ url: r.url(), body: await r.body() });
      } catch {}
    });
    await page.goto(path === 'embedded' ? 'http://course.test/' : `${base}${path}`, { waitUntil: 'networkidle' });
    await page.waitForTimeout(1500);
    if (path === 'embedded') bodies.splice(0, bodies.length, ...bodies.filter((b) => b.url.startsWith(base)));
    const raw = bodies.reduce((n, b) => n + b.body.length, 0);
    const gz = bodies.reduce((n, b) => n + gzipSync(b.body).length, 0);
    const wasm = bodies.filter((b) => b.url.endsWith('.wasm')).reduce((n, b) => n + gzipSync(b.body).length, 0);
    console.log(`first load, ${name}: ${bodies.length} requests, ${kib(raw)} raw, ${kib(gz)} gzipped (wasm ${kib(wasm)} of it)`);
    await page.close();
  }

  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
  const t = JSON.parse(readFileSync(join(root, 'public/traces/tcp-v4-specific-8.json'), 'utf8'));
  const src = t.events;
  t.events = Array.from({ length: events }, (_, i) => ({ ...src[i % src.length], seq: i }));
  t.counts.events = events;
  t.counts.recorded = events;
  const file = join(dir, 'big.json');
  writeFileSync(file, JSON.stringify(t));
  console.log(`large trace: ${events.toLocaleString('en')} events, ${kib(statSync(file).size)}`);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${base}/traces/`);
  await page.waitForSelector('reuseport-traces[data-state=ready]', { timeout: 30_000 });
  await page.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: false });
  });
  const t0 = Date.now();
  await page.locator('reuseport-traces input[type=file]').setInputFiles(file);
  await page.waitForFunction(
    (n) => document.querySelector('reuseport-traces')?.dataset.state === 'ready' && (document.querySelector('.rl-tv-agree')?.textContent ?? '').includes(n),
    events.toLocaleString('en'),
    { timeout: 300_000 },
  );
  const ms = Date.now() - t0;
  const long = (await page.evaluate(() => window.__long)).sort((a, b) => b - a);
  const agree = await page.locator('.rl-tv-agree').textContent();
  console.log(
    `large trace without a key: answered in ${ms} ms; main-thread tasks over 50 ms: ${long.length}, longest ${long[0]?.toFixed(0) ?? 0} ms; "${agree}"`,
  );
  // With the key: the batch path predicts every event.
  await page.evaluate(() => {
    window.__long = [];
  });
  const t1 = Date.now();
  await page.locator('reuseport-traces form.rl-tv-keyform input').fill('0x2f3923d9');
  await page.locator('reuseport-traces form.rl-tv-keyform button').click();
  await page.waitForFunction((n) => (document.querySelector('.rl-tv-agree')?.textContent ?? '').includes(`of ${n} predicted`), events.toLocaleString('en'), {
    timeout: 300_000,
  });
  const ms2 = Date.now() - t1;
  const long2 = (await page.evaluate(() => window.__long)).sort((a, b) => b - a);
  console.log(
    `large trace with the key: predicted in ${ms2} ms; tasks over 50 ms: ${long2.length}, longest ${long2[0]?.toFixed(0) ?? 0} ms; ` +
      `"${await page.locator('.rl-tv-agree').textContent()}"`,
  );
} finally {
  await browser.close();
  stop();
}
