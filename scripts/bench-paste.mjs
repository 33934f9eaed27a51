// The paste analyser on the lookup page, in headless Chromium, and its simulation in Node. Prints numbers; never fails on time.
// - N lines of `ss -tn` output (random clients to 10.0.0.1:8080) chosen as a file: time until every line is answered,
//   until the secret-free simulation is done, and the longest main-thread task meanwhile (long-task observer);
// - the in-browser key search over all 2^32 keys from a curated trace, on one worker per core;
// - the secret-free simulation alone: 10,000 boots of 10,000 IPv4 tuples in the wasm build (Node).
// Usage: node scripts/bench-paste.mjs [--no-build] [--lines 1000000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS, servePreview, xorshift32 } from './bench-util.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({ options: { 'no-build': { type: 'boolean' }, lines: { type: 'string', default: '1000000' } } });
const lines = Number(opts.lines);
if (!opts['no-build']) execFileSync('npx', ['astro', 'build', '--silent'], { cwd: root, stdio: 'inherit' });

// The same file every run.
const rnd = xorshift32(0x9e3779b9);
const dir = mkdtempSync(join(tmpdir(), 'rl-paste-'));
const file = join(dir, 'ss-tn.txt');
{
  const out = ['State  Recv-Q Send-Q   Local Address:Port    Peer Address:Port Process'];
  for (let i = 0; i < lines; i++) {
    const a = rnd();
    out.push(`ESTAB  0      0           10.0.0.1:8080   10.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}:${20000 + (rnd() % 40000)}`);
  }
  writeFileSync(file, out.join('\n') + '\n');
}
const mb = (readFileSync(file).length / 1e6).toFixed(1);

const { base, stop } = await servePreview(root, '/lookup/');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto(`${base}/lookup/`);
  const w = page.locator('reuseport-paste');
  await w.scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('reuseport-paste')?.dataset.state === 'ready');
  await w.locator('input[type=file]').setInputFiles(file);
  await page.evaluate(() => {
    window.__long = [];
    const el = document.querySelector('reuseport-paste');
    window.__times = {};
    for (const n of ['answered', 'completed']) el.addEventListener(`reuseport:${n}`, (e) => (window.__times[n] = e.detail.ms), { once: true });
  });
  await w.getByRole('button', { name: 'Analyse' }).click();
  await page.waitForFunction(() => window.__times.completed !== undefined, null, { timeout: 600_000 });
  const r = await page.evaluate(() => ({ t: window.__times, long: window.__long }));
  const longest = r.long.length ? Math.max(...r.long) : 0;
  console.log(
    `paste: ${lines.toLocaleString('en-US')} lines of ss -tn (${mb} MB) answered in ${(r.t.answered / 1000).toFixed(2)} s, simulation done at ` +
      `${(r.t.completed / 1000).toFixed(2)} s; longest main-thread task ${longest.toFixed(0)} ms (${r.long.length} tasks over 50 ms)`,
  );

  // The key search: a curated trace dropped in, then "Search every key".
  const trace = join(root, 'public/traces/tcp-v4-specific-8.json');
  await page.reload();
  await w.scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('reuseport-paste')?.dataset.state === 'ready');
  await w.locator('input[type=file]').setInputFiles(trace);
  await w.getByRole('button', { name: 'Analyse' }).click();
  await page.waitForFunction(
    () => document.querySelector('reuseport-paste')?.dataset.state === 'ready' && document.querySelector('.rl-paste-recover button'),
    null,
    { timeout: 120_000 },
  );
  await page.evaluate(() => (window.__long = []));
  const t0 = Date.now();
  await w.getByRole('button', { name: 'Search every key' }).click();
  await w
    .locator('.rl-paste-recover')
    .getByText(/fit every observation/)
    .waitFor({ timeout: 600_000 });
  const secs = (Date.now() - t0) / 1000;
  const said = await w.locator('.rl-paste-recover p').allTextContents();
  const long2 = await page.evaluate(() => window.__long);
  console.log(
    `recover: ${secs.toFixed(2)} s wall in the browser; ${said.find((s) => s.includes('G keys/s'))}; longest main-thread task ` +
      `${long2.length ? Math.max(...long2).toFixed(0) : 0} ms`,
  );
} finally {
  await browser.close();
  stop();
}

// The simulation alone, in the wasm build under Node.
const { initSync, Paste } = await import(join(root, 'src/model/pkg-lookup/reuseport.js'));
initSync({ module: readFileSync(join(root, 'src/model/pkg-lookup/reuseport_bg.wasm')) });
const p = new Paste({ format: 'pairs', bind: '10.0.0.1:8080', flip: false });
const tuples = [];
for (let i = 0; i < 10_000; i++) {
  const a = rnd();
  tuples.push(`10.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}:${20000 + (rnd() % 40000)} 10.0.0.1:8080`);
}
p.feed(tuples.join('\n') + '\n');
p.finish(false);
const req = {
  kernel: '6.18',
  group: {
    proto: 'tcp',
    listeners: 64,
    bind: '10.0.0.1',
    port: 8080,
    v6only: false,
    keys: { v4: 0, v6Outer: 0, v6Inner: 0 },
    closed: [],
    shutdown: [],
    tcpMigrateReq: false,
    incomingCpu: [],
    connected: [],
    program: null,
  },
  keys: null,
  cpu: 0,
};
p.spreadStart(req, 1);
const t1 = performance.now();
p.spreadStep(10_000);
const s = (performance.now() - t1) / 1000;
console.log(
  `spread (wasm, Node): 10,000 boots x ${p.rowCount().toLocaleString('en-US')} IPv4 tuples, 64 listeners: ${s.toFixed(2)} s ` +
    `(${(1e8 / s / 1e6).toFixed(0)} M selections/s, vectorised ${p.spreadVectorised()})`,
);
