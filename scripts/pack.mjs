#!/usr/bin/env node
// `npm run pack`: the offline course pack. Builds the site (base "/") and
// zips it, with a short README, into reuseport-lab-pack.zip: unpack it at the
// root of any static web server and every page, widget, embed script and
// iframe page works with the network off (the site loads nothing from any
// other host). `--no-build` zips the existing dist/ (or `--dist DIR`, a build
// made elsewhere, as the e2e tests' PW_DIST); `--out FILE` names the zip.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { makePack } from './pack-lib.mjs';

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

let pack;
try {
  pack = makePack(dist);
} catch (e) {
  console.error(`pack: cannot read ${dist} (${e.message}); run without --no-build`);
  process.exit(1);
}
const { zip, files, bytes } = pack;
const out = resolve(root, values.out);
writeFileSync(out, zip);
console.log(`pack: ${files} files, ${(bytes / 1e6).toFixed(1)} MB → ${relative(process.cwd(), out) || out} (${(zip.length / 1e6).toFixed(1)} MB)`);
