/** The built site as the browser tests see it: its pages, and the widgets a page may hold. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';

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

/**
 * What makes a page scroll sideways: the document's scroll width against its client width, and up to five elements
 * that reach past the right edge (with the shadow roots they sit in). Inside a scroller of its own (a wide table, a
 * code block, an element marked `data-scrolls`) an element may be wider; the page may not.
 */
export async function sideways(page: Page): Promise<{ scroll: number; width: number; out: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    const walk = (root: Document | ShadowRoot, where: string) => {
      for (const e of root.querySelectorAll('*')) {
        const b = e.getBoundingClientRect();
        if (b.width > 0 && b.right > width + 1 && !e.closest('pre, .expressive-code, .sl-markdown-content table, [data-scrolls]'))
          out.push(`${where}${e.localName}.${String(e.getAttribute('class') ?? '').replace(/ /g, '.')} right ${Math.round(b.right)}`);
        if (e.shadowRoot) walk(e.shadowRoot, `${where}${e.localName} › `);
      }
    };
    walk(document, '');
    return { scroll: document.documentElement.scrollWidth, width, out: out.slice(0, 5) };
  });
}
