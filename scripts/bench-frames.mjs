#!/usr/bin/env node
// Frame-time benchmark of the dispatch visualizer on the production build served by `astro preview`
// on a free port, measured in the page with requestAnimationFrame timestamps. Two settings:
//   1. 64 listeners and about 2,000 SYNs in flight (the arrival rate that keeps that many in flight);
//   2. every control at its maximum (listeners, clients, arrival rate and speed: the maxima are read
//      from the controls themselves, so a lowered range is what gets measured), on 6.18 and on 3.9.
// For each it prints the frame-interval and per-frame work percentiles, then the time a
// "Close listener" click takes at that setting. Prints numbers; never fails on time.
// Usage: node scripts/bench-frames.mjs [--no-build] [--dist DIR] [--seconds 5] [--listeners 64] [--inflight 2000] [--only inflight|max]
import { execFileSync, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS, freePort, numberOption, waitFor } from './bench-util.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'no-build': { type: 'boolean' },
    dist: { type: 'string', default: 'dist' },
    seconds: { type: 'string', default: '5' },
    listeners: { type: 'string', default: '64' },
    inflight: { type: 'string', default: '2000' },
    only: { type: 'string' },
  },
});
const seconds = numberOption(opts, 'seconds', 600);
const listeners = numberOption(opts, 'listeners', 100_000);
const inflight = numberOption(opts, 'inflight', 1_000_000);
const only = opts.only;
if (only !== undefined && only !== 'inflight' && only !== 'max') {
  console.error(`--only: \`${only}\` is not inflight or max`);
  process.exit(2);
}
const dist = resolve(root, opts.dist);
const SYN_TRAVEL = 1.6; // simulated seconds, src/scene/dispatch/sim.ts TRAVEL.SYN
const rate = Math.round(inflight / SYN_TRAVEL);

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const fmt = (x) => x.toFixed(2).padStart(7);

if (!opts['no-build']) execFileSync('npx', ['astro', 'build', '--silent', '--outDir', dist], { cwd: root, stdio: 'inherit' });
const port = await freePort();
const server = spawn('npx', ['astro', 'preview', '--host', '127.0.0.1', '--port', String(port), '--outDir', dist], {
  cwd: root,
  stdio: 'ignore',
  detached: true,
});
const stop = () => {
  try {
    process.kill(-server.pid);
  } catch {}
};
const base = `http://127.0.0.1:${port}`;

/** Measures `seconds` of frames on the page as it is. */
async function measure(page) {
  return page.evaluate(
    (ms) =>
      new Promise((done) => {
        const { sim, clock } = document.querySelector('reuseport-dispatch').__dispatch;
        const frames = [];
        const work = [];
        const syns = [];
        let last = null;
        const t0 = performance.now();
        const tick = (t) => {
          if (last !== null) {
            frames.push(t - last);
            work.push(clock.workMs);
            syns.push(sim.particles.inFlight(sim.time));
          }
          last = t;
          if (t - t0 < ms) requestAnimationFrame(tick);
          else done({ frames, work, syns, packets: sim.particles.n, listening: sim.rows.length, clients: sim.clients.length, rate: sim.opts.rate });
        };
        requestAnimationFrame(tick);
      }),
    seconds * 1000,
  );
}

/** Clicks "Close listener" (the first listening member) and times the click's task and the frame after it. */
async function closeTiming(page) {
  return page.evaluate(
    () =>
      new Promise((done) => {
        const el = document.querySelector('reuseport-dispatch');
        const { clock } = el.__dispatch;
        const btn = [...el.shadowRoot.querySelectorAll('button')].find((b) => b.textContent === 'Close listener');
        const t0 = performance.now();
        btn.click();
        const click = performance.now() - t0;
        requestAnimationFrame(() => requestAnimationFrame((t) => done({ click, nextFrameWork: clock.workMs, toNextFrame: t - t0 })));
      }),
  );
}

function report(title, r) {
  const f = [...r.frames].sort((a, b) => a - b);
  const w = [...r.work].sort((a, b) => a - b);
  const s = [...r.syns].sort((a, b) => a - b);
  console.log(
    `\n${title}: ${r.listening} listeners, ${r.clients} clients, arrival rate ${r.rate}/s, ${r.frames.length} frames over ${seconds} s (headless ` +
      `Chromium, --disable-gpu)`,
  );
  console.log(`SYNs in flight: min ${s[0]}, median ${pct(s, 50)}, max ${s.at(-1)} (all packets incl. SYN-ACK/ACK at the end: ${r.packets})`);
  console.log('                     p50      p95      p99      max   (ms)');
  console.log(`frame interval  ${fmt(pct(f, 50))}  ${fmt(pct(f, 95))}  ${fmt(pct(f, 99))}  ${fmt(f.at(-1))}`);
  console.log(
    `frame work      ${fmt(pct(w, 50))}  ${fmt(pct(w, 95))}  ${fmt(pct(w, 99))}  ${fmt(w.at(-1))}   (model calls + scene + canvas + overlay, per frame)`,
  );
  const dropped = r.frames.filter((d) => d > 25).length;
  console.log(`frames longer than 25 ms (a missed 60 Hz vsync): ${dropped} of ${r.frames.length} (${((100 * dropped) / r.frames.length).toFixed(1)}%)`);
  console.log(`goal: p95 frame interval <= 16.7 ms; measured p95 ${pct(f, 95).toFixed(2)} ms`);
}

let browser;
try {
  await waitFor(`${base}/dispatch/`, 30_000);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const run = async (title, query, wantInFlight) => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${base}/dispatch/?${query}`);
    await page.waitForFunction(() => document.querySelector('reuseport-dispatch')?.__dispatch, null, { timeout: 60_000 });
    await page.locator('reuseport-dispatch canvas').scrollIntoViewIfNeeded();
    // Let the scene fill up to its steady state (one SYN travel plus the handshake).
    if (wantInFlight)
      await page.waitForFunction(
        (want) => {
          const { sim } = document.querySelector('reuseport-dispatch').__dispatch;
          return sim.particles.inFlight(sim.time) >= want * 0.95;
        },
        wantInFlight,
        { timeout: 60_000, polling: 200 },
      );
    await page.waitForTimeout(2000);
    report(title, await measure(page));
    const c = await closeTiming(page);
    console.log(
      `close listener: click handler ${c.click.toFixed(1)} ms, work of the frame after ${c.nextFrameWork.toFixed(1)} ms, click to the second frame ` +
        `${c.toNextFrame.toFixed(1)} ms`,
    );
    await page.close();
  };
  if (only !== 'max') await run(`${inflight} SYNs in flight`, `listeners=${listeners}&clients=2000&rate=${rate}&seed=1`, inflight);
  if (only !== 'inflight') {
    // The controls' maxima, read from the controls.
    const page = await browser.newPage();
    await page.goto(`${base}/dispatch/?autoplay=false`);
    await page.waitForFunction(() => document.querySelector('reuseport-dispatch')?.__dispatch, null, { timeout: 60_000 });
    const max = await page.evaluate(() => {
      const r = document.querySelector('reuseport-dispatch').shadowRoot;
      const m = (suffix) => Number(r.querySelector(`[id$="-${suffix}"]`).max);
      const speeds = [...r.querySelectorAll('[id$="-speed"] option')].map((o) => Number(o.value));
      return { listeners: m('listeners'), clients: m('clients'), rate: m('rate'), speed: Math.max(...speeds) };
    });
    await page.close();
    // On the default kernel, and on 3.9, whose lookup scans every listener of the port list for each SYN
    // (a report measured 2.9 fps there against 27-47 on 6.18).
    for (const kernel of ['6.18', '3.9']) {
      await run(
        `controls at their maximum on ${kernel} (speed ${max.speed}×)`,
        `kernel=${kernel}&listeners=${max.listeners}&clients=${max.clients}&rate=${max.rate}&speed=${max.speed}&seed=1`,
        0,
      );
    }
  }
} finally {
  await browser?.close();
  stop();
}
