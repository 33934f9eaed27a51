#!/usr/bin/env node
// Lighthouse performance and accessibility scores of the main pages, measured
// with the system Chromium against the built site served with gzip, as a
// production host serves it (`--no-compress`: uncompressed, as `astro preview`).
// Prints numbers; never fails on them. Lighthouse 12 (the last for Node 20)
// is fetched by npx on first use, not installed with the project (185 MB).
// Usage: node scripts/bench-lighthouse.mjs [--no-build] [--no-compress] [--dist DIR] [--runs N] [paths…]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serveCompressed, servePreview } from './bench-util.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'no-build': { type: 'boolean', default: false },
    'no-compress': { type: 'boolean', default: false },
    dist: { type: 'string', default: 'dist' },
    runs: { type: 'string', default: '1' },
  },
});
const root = fileURLToPath(new URL('..', import.meta.url));
const paths = positionals.length
  ? positionals
  : ['/', '/dispatch/', '/lookup/', '/hash/', '/scenarios/', '/scenarios/slow-worker/', '/traces/', '/embedding/', '/zh-cn/', '/embed/dispatch/'];
const runs = Math.max(1, Math.min(5, Number(values.runs) || 1));
if (!values['no-build']) execFileSync('npx', ['astro', 'build', '--silent', '--outDir', values.dist], { cwd: root, stdio: 'inherit' });

const { base, stop } = values['no-compress'] ? await servePreview(root, '/', values.dist) : await serveCompressed(resolve(root, values.dist));
const dir = mkdtempSync(join(tmpdir(), 'rl-lh-'));
try {
  for (const path of paths) {
    const scores = { performance: [], accessibility: [] };
    let worst = [];
    for (let i = 0; i < runs; i++) {
      const out = join(dir, `r${i}.json`);
      try {
        execFileSync(
          'npx',
          [
            '--yes',
            'lighthouse@12.8.2',
            `${base}${path}`,
            '--quiet',
            '--only-categories=performance,accessibility',
            '--output=json',
            `--output-path=${out}`,
            '--chrome-flags=--headless=new --no-sandbox --disable-gpu',
          ],
          { env: { ...process.env, CHROME_PATH: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' }, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 },
        );
      } catch (e) {
        console.log(`${path}: not measured (${e.message.split('\n')[0]})`);
        break;
      }
      const r = JSON.parse(readFileSync(out, 'utf8'));
      for (const k of Object.keys(scores)) scores[k].push(Math.round(r.categories[k].score * 100));
      worst = Object.values(r.audits)
        .filter((a) => a.score !== null && a.score < 0.9 && !['informative', 'notApplicable', 'manual'].includes(a.scoreDisplayMode))
        .map((a) => `${a.id}${a.displayValue ? ` (${a.displayValue})` : ''}`);
    }
    if (!scores.performance.length) continue;
    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `${path}: performance ${med(scores.performance)}, accessibility ` +
        `${med(scores.accessibility)}${runs > 1 ? ` (median of ${runs})` : ''}${worst.length ? `; below 90: ${worst.join(', ')}` : ''}`,
    );
  }
} finally {
  stop();
}
