#!/usr/bin/env node
// `npm run pack`: the offline course pack. Builds the site (base "/") and
// zips it, with a short README, into reuseport-lab-pack.zip: unpack it at the
// root of any static web server and every page, widget, embed script and
// iframe page works with the network off (the site loads nothing from any
// other host). `--no-build` zips the existing dist/ (or `--dist DIR`, a build
// made elsewhere, as the e2e tests' PW_DIST); `--out FILE` names the zip.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { zipSync } from 'fflate';

const { values } = parseArgs({
  options: { 'no-build': { type: 'boolean', default: false }, out: { type: 'string', default: 'reuseport-lab-pack.zip' }, dist: { type: 'string' } },
});
const root = new URL('..', import.meta.url).pathname;
const dist = values.dist ? resolve(values.dist) : join(root, 'dist');
if (values.dist && !values['no-build']) {
  console.error('pack: --dist names a build made elsewhere; give --no-build with it');
  process.exit(1);
}

if (!values['no-build']) {
  const env = { ...process.env };
  delete env.BASE_PATH;
  const r = spawnSync('npx', ['astro', 'build', '--silent'], { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error('pack: the site build failed; no pack was written');
    process.exit(1);
  }
}

const files = {};
let bytes = 0;
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else {
      const data = readFileSync(p);
      bytes += data.length;
      // Already-compressed formats are stored, the rest deflated.
      files[`reuseport-lab/${relative(dist, p)}`] = [data, { level: /\.(wasm|png|jpg|woff2?|gz|zip)$/.test(name) ? 0 : 6 }];
    }
  }
};
try {
  walk(dist);
} catch (e) {
  console.error(`pack: cannot read ${dist} (${e.message}); run without --no-build`);
  process.exit(1);
}
files['reuseport-lab/PACK-README.txt'] = [
  new TextEncoder().encode(
    [
      'Reuseport Lab, offline course pack',
      '',
      'Serve this directory from the root of any static web server, for example:',
      '  cd reuseport-lab && python3 -m http.server 8000',
      'then open http://localhost:8000/ . Nothing is loaded from any other host.',
      '',
      'Embed a widget in a course page served from the same server:',
      '  <script type="module" src="/embed/reuseport-lab.js"></script>',
      '  <reuseport-dispatch listeners="4" compact></reuseport-dispatch>',
      'or as an iframe: <iframe src="/embed/dispatch/?listeners=4"></iframe>',
      'The site root must be the server root (the pages link to /...).',
      '',
    ].join('\n'),
  ),
  { level: 6 },
];
const zip = zipSync(files);
const out = resolve(root, values.out);
writeFileSync(out, zip);
console.log(
  `pack: ${Object.keys(files).length} files, ${(bytes / 1e6).toFixed(1)} MB → ${relative(process.cwd(), out) || out} (${(zip.length / 1e6).toFixed(1)} MB)`,
);
