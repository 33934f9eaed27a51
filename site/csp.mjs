// A strict Content-Security-Policy for the built site: after `astro build`,
// every inline <script> in every page (Starlight's theme and sidebar scripts,
// Astro's small hoisted modules) moves to a file under `_rl/` named by its
// hash, and each page gets the policy as its first <head> element. The pages
// then run with `script-src 'self' 'wasm-unsafe-eval'`: no inline script, no
// eval. Hosts that can set headers should send the same policy (README).
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The policy every page carries (frame-ancestors only works as a header, so it is not here). */
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

const SCRIPT = /<script\b([^>]*)>([\s\S]*?)<\/script>/g;

async function* htmlFiles(dir) {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* htmlFiles(p);
    else if (e.name.endsWith('.html')) yield p;
  }
}

/** Moves the inline scripts of the pages under `outDir` to files and adds the policy; returns the counts. */
export async function externaliseScripts(outDir, base) {
  const written = new Map();
  await mkdir(join(outDir, '_rl'), { recursive: true });
  let pages = 0;
  let moved = 0;
  for await (const file of htmlFiles(outDir)) {
    const html = await readFile(file, 'utf8');
    const out = html.replace(SCRIPT, (whole, attrs, body) => {
      if (/\bsrc\s*=/.test(attrs) || !body.trim()) return whole;
      const type = /\btype\s*=\s*"([^"]*)"/.exec(attrs)?.[1] ?? '';
      // Data blocks (JSON, import maps) are not executed and stay inline.
      if (type && type !== 'module' && type !== 'text/javascript') return whole;
      const name = `s-${createHash('sha256').update(body).digest('hex').slice(0, 16)}.js`;
      if (!written.has(name)) written.set(name, body);
      moved++;
      return `<script${attrs} src="${base}_rl/${name}"></script>`;
    });
    const withPolicy = out.replace(/<head>/, `<head><meta http-equiv="content-security-policy" content="${CSP}">`);
    if (!withPolicy.includes('http-equiv="content-security-policy"')) throw new Error(`${file}: no <head> to put the Content-Security-Policy in`);
    await writeFile(file, withPolicy);
    pages++;
  }
  for (const [name, body] of written) await writeFile(join(outDir, '_rl', name), body);
  return { pages, moved, files: written.size };
}

export default function strictCsp() {
  let base = '/';
  return {
    name: 'reuseport-csp',
    hooks: {
      'astro:config:done': ({ config }) => {
        base = config.base.replace(/\/?$/, '/');
      },
      'astro:build:done': async ({ dir, logger }) => {
        const r = await externaliseScripts(fileURLToPath(dir), base);
        logger.info(`CSP: ${r.pages} pages, ${r.moved} inline scripts moved to ${r.files} files under _rl/`);
      },
    },
  };
}
