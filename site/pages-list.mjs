// Page ids and the guide's order, from the file names in content/ (used by the
// content loader and the sidebar, and by tests). English is the root locale.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const contentDir = fileURLToPath(new URL('../content/', import.meta.url));

/** `en/01-four-tuple.md` → `four-tuple`; `zh-CN/01-four-tuple.md` → `zh-cn/four-tuple`; `zh-CN/index.md` → `zh-cn`. */
export function pageId(entry) {
  const [lang, ...rest] = entry.replace(/\.md$/, '').split('/');
  const path = rest.map((p) => p.replace(/^\d+-/, '')).join('/');
  if (lang === 'en') return path;
  // A language's front page is the locale itself (`zh-cn`), as Starlight expects.
  return path === 'index' ? lang.toLowerCase() : `${lang.toLowerCase()}/${path}`;
}

/** The guide's chapters in order: slugs of content/en/NN-*.md. */
export function chapterSlugs() {
  return readdirSync(`${contentDir}en`)
    .filter((f) => /^\d+-.+\.md$/.test(f))
    .sort()
    .map((f) => f.replace(/^\d+-/, '').replace(/\.md$/, ''));
}

/** The scenario gallery's pages in order: `scenarios/<slug>` of content/en/scenarios/NN-*.md. */
export function scenarioSlugs() {
  return readdirSync(`${contentDir}en/scenarios`)
    .filter((f) => /^\d+-.+\.md$/.test(f))
    .sort()
    .map((f) => `scenarios/${f.replace(/^\d+-/, '').replace(/\.md$/, '')}`);
}
