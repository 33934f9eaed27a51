// Link checker over the built site (dist/): every internal link and #anchor
// in both languages resolves (linkinator, recursing from each language's front
// page), and every trace a page names (`?trace=FILE` links and
// `<reuseport-trace src=FILE>` cards) is a file in public/traces/. Exits 1
// naming each broken link and the page it is on.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { LinkChecker } from 'linkinator';

// Usage: node scripts/check-links.mjs [ROOT] [BASE]: the site built with base BASE (default "/") lies in ROOT/BASE.
const { positionals } = parseArgs({ allowPositionals: true });
if (positionals.length > 2) {
  console.error('usage: node scripts/check-links.mjs [ROOT] [BASE]');
  process.exit(2);
}
const dist = positionals[0] ?? 'dist';
const base = (positionals[1] ?? '/').replace(/\/?$/, '/');
const problems = [];

const checker = new LinkChecker();
const result = await checker.check({
  serverRoot: dist,
  path: [base, `${base}zh-cn/`],
  recurse: true,
  checkFragments: true,
  // Only the site's own pages: external links are not fetched (no network here).
  linksToSkip: (link) => Promise.resolve(!/^https?:\/\/(localhost|127\.0\.0\.1)[:/]/.test(link)),
});
for (const l of result.links) if (l.state === 'BROKEN') problems.push(`${l.url} (status ${l.status}) on ${l.parent ?? '?'}`);

function* htmlFiles(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* htmlFiles(p);
    else if (name.endsWith('.html')) yield p;
  }
}
let pages = 0;
let traceRefs = 0;
for (const file of htmlFiles(dist)) {
  pages++;
  const html = readFileSync(file, 'utf8');
  for (const m of html.matchAll(/[?&](?:amp;)?trace=([^"&#\s]+)|<reuseport-trace\s[^>]*src="([^"]+)"/g)) {
    const name = decodeURIComponent(m[1] ?? m[2]);
    traceRefs++;
    if (!existsSync(join('public', 'traces', name))) problems.push(`trace ${name} does not exist (public/traces/) on ${relative(dist, file)}`);
  }
}

console.log(`check-links: ${result.links.length} links checked (fragments too), ${traceRefs} trace references in ${pages} pages`);
if (problems.length) {
  for (const p of problems) console.error(`check-links: BROKEN ${p}`);
  process.exit(1);
}
