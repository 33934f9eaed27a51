// Shared by the benchmarks: a free loopback port, the built site served by `astro preview`, option reading and a seeded generator.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

export async function waitFor(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${ms} ms`);
}

/** Serves dist/ on a free loopback port; returns its base URL and a stop function. */
export async function servePreview(root, path = '/', outDir = 'dist') {
  const port = await freePort();
  const server = spawn('npx', ['astro', 'preview', '--host', '127.0.0.1', '--port', String(port), '--outDir', outDir], {
    cwd: root,
    stdio: 'ignore',
    detached: true,
  });
  return answering(server, port, path);
}

/**
 * Waits (up to 30 s) until the server just spawned, in its own process group, answers `path` on `port`;
 * returns its base URL and a stop function that ends the whole group (the server is stopped if it never answers).
 */
async function answering(server, port, path) {
  const base = `http://127.0.0.1:${port}`;
  const stop = () => {
    try {
      process.kill(-server.pid);
    } catch {}
  };
  try {
    await waitFor(`${base}${path}`, 30_000);
  } catch (e) {
    stop();
    throw e;
  }
  return { base, stop };
}

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * The number given to `--NAME` (a `parseArgs` string value), refused with a
 * message naming the option unless it is a number above 0 and at most `max`.
 */
export function numberOption(values, name, max) {
  const v = Number(values[name]);
  if (!Number.isFinite(v) || v <= 0 || v > max) {
    console.error(`--${name}: \`${values[name]}\` is not a number above 0 and at most ${max}`);
    process.exit(2);
  }
  return v;
}

/**
 * Serves a built site with gzip, as a production host would (`astro preview`
 * sends everything uncompressed, which Lighthouse then charges to the page):
 * `scripts/serve-gzip.mjs` in its own process, so a benchmark that blocks on a
 * child (execFileSync) does not block the server. Returns `{ base, stop }`.
 */
export async function serveCompressed(dir) {
  if (!existsSync(`${dir}/index.html`)) throw new Error(`${dir} holds no built site (no index.html): build it first, or leave out --no-build`);
  const port = await freePort();
  const server = spawn(process.execPath, [new URL('./serve-gzip.mjs', import.meta.url).pathname, dir, String(port)], { stdio: 'ignore', detached: true });
  return answering(server, port, '/');
}

/**
 * xorshift32 (shifts 13, 17, 5) from `seed` (not 0): a function returning the
 * next unsigned 32-bit number, so generated inputs are the same every run.
 * benches/select.rs draws its packets with the same generator and seed as bench.mjs.
 */
export function xorshift32(seed) {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}
