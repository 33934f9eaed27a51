/**
 * The offline course pack (`npm run pack`): the zip of the built site, unpacked
 * and served by a plain static server, works with every request to anywhere
 * else refused: pages, widgets, the embed script in a course page beside it,
 * and an iframe page.
 */
import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize } from 'node:path';
import { unzipSync } from 'fflate';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain',
};

let server: Server;
let origin: string;

test.beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-pack-'));
  const zip = join(dir, 'pack.zip');
  // The build the server serves (PW_DIST, as playwright.config.ts hands it to `astro preview`): zipping dist/ tested
  // another build, or failed where there is none.
  execFileSync('node', ['scripts/pack.mjs', '--no-build', '--dist', process.env.PW_DIST ?? 'dist', '--out', zip], { stdio: 'pipe' });
  const files = unzipSync(readFileSync(zip));
  for (const [name, data] of Object.entries(files)) {
    const p = join(dir, name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data);
  }
  const site = join(dir, 'reuseport-lab');
  expect(existsSync(join(site, 'PACK-README.txt'))).toBe(true);
  // A course page next to the site, as a trainer would add one.
  writeFileSync(
    join(site, 'course.html'),
    '<!doctype html><title>Course</title><script type="module" src="/embed/reuseport-lab.js"></script><reuseport-exercise kind="syn" ' +
      'count="2"></reuseport-exercise><reuseport-bind-check kernel="5.10"></reuseport-bind-check>',
  );
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname));
    let file = join(site, path);
    if (!file.startsWith(site)) return void res.writeHead(403).end();
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise<void>((r) =>
    server.listen(0, '127.0.0.1', () => {
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      r();
    }),
  );
});

test.afterAll(() => new Promise<void>((r) => server.close(() => r())));

test('the unpacked course pack works with every other host unreachable', async ({ page }) => {
  const elsewhere: string[] = [];
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(`${origin}/`)) return route.continue();
    elsewhere.push(route.request().url());
    return route.abort('internetdisconnected');
  });
  const ready = async (tags: string[]) => {
    for (const tag of tags) {
      const el = page.locator(tag).first();
      await el.scrollIntoViewIfNeeded();
      await expect
        .poll(() => el.evaluate((e) => Boolean(e.shadowRoot?.firstElementChild && !e.shadowRoot.querySelector('.rl-error'))), {
          message: `${page.url()} ${tag}`,
          timeout: 30_000,
        })
        .toBe(true);
    }
  };
  await page.goto(`${origin}/`);
  await ready(['reuseport-dispatch']);
  await page.goto(`${origin}/zh-cn/hash/`);
  await ready(['reuseport-exercise']);
  await page.goto(`${origin}/course.html`);
  await ready(['reuseport-exercise', 'reuseport-bind-check']);
  await page.goto(`${origin}/embed/lookup/?listeners=4&secret=0x2f3923d9`);
  await ready(['reuseport-lookup']);
  await page.goto(`${origin}/lookup/`);
  await ready(['reuseport-paste']);
  expect(elsewhere).toEqual([]);
});
