// The offline course pack's contents: every file of a built site under reuseport-lab/, with a short README. Used by
// `npm run pack` (scripts/pack.mjs) and by the site build, which puts the pack in its own output for download
// (site/pack-build.mjs).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { zipSync } from 'fflate';

/** The name of the pack in a site's output, skipped when the pack is made from that output. */
export const PACK_FILE = 'reuseport-lab-pack.zip';

/**
 * Zips the site built in `dist` (with base path `base`, "/" by default). Throws when `dist` cannot be read.
 * @returns {{ zip: Uint8Array, files: number, bytes: number }}
 */
export function makePack(dist, base = '/') {
  const files = {};
  let bytes = 0;
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (!(dir === dist && name === PACK_FILE)) {
        const data = readFileSync(p);
        bytes += data.length;
        // Already-compressed formats are stored, the rest deflated.
        files[`reuseport-lab/${relative(dist, p)}`] = [data, { level: /\.(wasm|png|jpg|woff2?|gz|zip)$/.test(name) ? 0 : 6 }];
      }
    }
  };
  walk(dist);
  const root = base === '/';
  files['reuseport-lab/PACK-README.txt'] = [
    new TextEncoder().encode(
      [
        'Reuseport Lab, offline course pack',
        '',
        root ? 'Serve this directory from the root of any static web server, for example:' : `These pages were built for the path ${base}: serve the`,
        root ? '  cd reuseport-lab && python3 -m http.server 8000' : `directory that holds this one so that it answers at ${base}, for example:`,
        root
          ? 'then open http://localhost:8000/ . Nothing is loaded from any other host.'
          : `  mkdir -p site && cp -r reuseport-lab site${base.replace(/\/$/, '')} && cd site && python3 -m http.server 8000`,
        root ? '' : `then open http://localhost:8000${base} . Nothing is loaded from any other host.`,
        '',
        'Embed a widget in a course page served from the same server:',
        `  <script defer src="${base}embed/reuseport-lab.js"></script>`,
        '  <reuseport-dispatch listeners="4" compact></reuseport-dispatch>',
        `or as an iframe: <iframe src="${base}embed/dispatch/?listeners=4"></iframe>`,
        `The site must answer at ${base} (the pages link to ${base}...).`,
        '',
      ]
        .filter((l, i, a) => !(l === '' && a[i - 1] === ''))
        .join('\n'),
    ),
    { level: 6 },
  ];
  return { zip: zipSync(files), files: Object.keys(files).length, bytes };
}
