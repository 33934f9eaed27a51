import { defineCollection } from 'astro:content';
import { glob } from 'astro/loaders';
import { docsSchema } from '@astrojs/starlight/schema';
import { pageFields } from './schema';
import { pageId } from './pages-list.mjs';

export const collections = {
  docs: defineCollection({
    // content/en/NN-slug.md is served at /slug/, content/zh-CN/NN-slug.md at /zh-cn/slug/.
    loader: glob({ pattern: '**/[^_]*.md', base: './content', generateId: ({ entry }) => pageId(entry) }),
    schema: docsSchema({ extend: pageFields }),
  }),
};
