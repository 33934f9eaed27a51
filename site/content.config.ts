import { defineCollection } from 'astro:content';
import { glob } from 'astro/loaders';
import { docsSchema, i18nSchema } from '@astrojs/starlight/schema';
import { i18nLoader } from '@astrojs/starlight/loaders';
import { pageFields } from './schema';
import { pageId } from './pages-list.mjs';

export const collections = {
  docs: defineCollection({
    // content/en/NN-slug.md is served at /slug/, content/zh-CN/NN-slug.md at /zh-cn/slug/.
    loader: glob({ pattern: '**/[^_]*.md', base: './content', generateId: ({ entry }) => pageId(entry) }),
    schema: docsSchema({ extend: pageFields }),
  }),
  // site/content/i18n/<lang>.json: words of Starlight's own UI that its built-in tables leave out (Pagefind's result lines in Chinese).
  i18n: defineCollection({ loader: i18nLoader(), schema: i18nSchema() }),
};
