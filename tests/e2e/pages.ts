/** The built site as the browser tests see it: its pages, and the widgets a page may hold. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The production build the server serves: PW_DIST, as playwright.config.ts hands it to `astro preview` (default dist/). */
export const DIST = process.env.PW_DIST ?? 'dist';

/** Every built page, as a path under the site root (the iframe pages embed/… included; callers filter them). */
export function builtPages(dir = DIST, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (['_astro', 'pagefind'].includes(name) && prefix === '') continue;
      out.push(...builtPages(p, `${prefix}${name}/`));
    } else if (name === 'index.html') out.push(prefix);
  }
  return out;
}

/** Every widget's element name, as one selector. */
export const WIDGETS =
  'reuseport-dispatch, reuseport-lookup, reuseport-paste, reuseport-bind, reuseport-bind-check, reuseport-trace, reuseport-traces, reuseport-exercise, ' +
  'reuseport-scenario, reuseport-scenario-match, reuseport-server, reuseport-editor, reuseport-quic-reload';
