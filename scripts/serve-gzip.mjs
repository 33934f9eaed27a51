#!/usr/bin/env node
// A static server for benchmarks: a built site on a loopback port, with gzip for text and wasm
// when the client accepts it, as a production host serves it. Usage: node scripts/serve-gzip.mjs DIR PORT
import { readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const [dirArg, portArg] = process.argv.slice(2);
const port = Number(portArg);
if (!dirArg || !Number.isInteger(port) || port < 1 || port > 65535) {
  console.error('usage: node scripts/serve-gzip.mjs DIR PORT (PORT: 1–65535)');
  process.exit(2);
}
const dir = resolve(dirArg);
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.xml': 'application/xml',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.wasm', '.xml', '.txt']);
const gz = new Map();

async function answer(req, res) {
  let path;
  try {
    path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
  } catch {
    res.writeHead(400).end();
    return;
  }
  let file = join(dir, path);
  if (!file.startsWith(dir)) {
    res.writeHead(403).end();
    return;
  }
  let status = 200;
  try {
    if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
    await stat(file);
  } catch {
    file = join(dir, '404.html');
    status = 404;
  }
  let body;
  try {
    body = await readFile(file);
  } catch {
    res.writeHead(404).end();
    return;
  }
  const ext = extname(file);
  const headers = { 'content-type': TYPES[ext] ?? 'application/octet-stream' };
  if (COMPRESSIBLE.has(ext) && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
    // Keyed by modification time too: a rebuild under a running server is served fresh.
    const key = `${file}@${(await stat(file)).mtimeMs}`;
    if (!gz.has(key)) gz.set(key, gzipSync(body, { level: 6 }));
    body = gz.get(key);
    headers['content-encoding'] = 'gzip';
  }
  headers['content-length'] = body.length;
  res.writeHead(status, headers).end(body);
}

createServer((req, res) => {
  answer(req, res).catch(() => res.writeHead(500).end());
}).listen(port, '127.0.0.1');
