// The offline course pack as part of the site: after the build (and after the embed script and the strict-CSP pass
// have written their files), the whole output is zipped into <outDir>/reuseport-lab-pack.zip, which every page's
// footer and the "Get Reuseport Lab" page offer for download. Built here rather than published elsewhere, so that any
// host of the site, the pack itself included, offers the pack of exactly what it serves, and the link checker finds it.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { makePack, PACK_FILE } from '../scripts/pack-lib.mjs';

export default function packBuild() {
  let base = '/';
  return {
    name: 'reuseport-pack',
    hooks: {
      'astro:config:done': ({ config }) => {
        base = config.base.replace(/\/?$/, '/');
      },
      'astro:build:done': ({ dir, logger }) => {
        const dist = fileURLToPath(dir);
        const { zip, files, bytes } = makePack(dist.replace(/\/$/, ''), base);
        writeFileSync(fileURLToPath(new URL(PACK_FILE, dir)), zip);
        logger.info(`course pack: ${files} files, ${(bytes / 1e6).toFixed(1)} MB → ${PACK_FILE} (${(zip.length / 1e6).toFixed(1)} MB)`);
      },
    },
  };
}
