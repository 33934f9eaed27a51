// The site: Astro with Starlight (docs frame: sidebar, table of contents,
// previous/next, i18n with fallback notices, Pagefind search with CJK
// segmentation, dark mode) over Markdown in content/, with the widgets as
// islands (src/islands/loader.ts hydrates each custom element when it
// scrolls into view). BASE_PATH sets the base ("/" or "/reuseport-lab/").
import { defineConfig, passthroughImageService } from 'astro/config';
import starlight from '@astrojs/starlight';
import { chapterSlugs, scenarioSlugs } from './site/pages-list.mjs';
import remarkCjkNewlines from './site/remark-cjk-newlines.mjs';
import traceValidator from './site/trace-validator-plugin.mjs';
import embedBuild from './site/embed-build.mjs';
import strictCsp from './site/csp.mjs';
import packBuild from './site/pack-build.mjs';
import remarkProject from './site/remark-project.mjs';
import { REPO_URL } from './site/project.mjs';

const base = process.env.BASE_PATH ?? '/';

export default defineConfig({
  base,
  // Where the site will be served (absolute oEmbed links); optional.
  site: process.env.SITE_URL || undefined,
  trailingSlash: 'ignore',
  devToolbar: { enabled: false },
  srcDir: './site',
  outDir: './dist',
  publicDir: './public',
  // No image processing (no sharp): the site has no raster images to optimise.
  image: { service: passthroughImageService() },
  markdown: { remarkPlugins: [remarkCjkNewlines, remarkProject] },
  server: { host: '127.0.0.1', port: 5173 },
  vite: {
    plugins: [traceValidator()],
    // The trace worker imports the compiled validator too.
    worker: { format: 'es', plugins: () => [traceValidator()] },
    build: { target: 'es2022' },
    // The wasm packages are loaded with `new URL(…, import.meta.url)`; keep them out of pre-bundling.
    optimizeDeps: { exclude: ['./src/model/pkg', './src/model/pkg-lookup'] },
  },
  integrations: [
    embedBuild(),
    starlight({
      title: { en: 'Reuseport Lab', 'zh-CN': 'Reuseport Lab' },
      description: 'Which SO_REUSEPORT listener Linux hands each connection to, why, and what that does to load.',
      defaultLocale: 'root',
      locales: {
        root: { label: 'English', lang: 'en' },
        'zh-cn': { label: '简体中文', lang: 'zh-CN' },
      },
      components: {
        Head: './site/components/Head.astro',
        SiteTitle: './site/components/SiteTitle.astro',
        FallbackContentNotice: './site/components/FallbackContentNotice.astro',
        Footer: './site/components/Footer.astro',
        MarkdownContent: './site/components/MarkdownContent.astro',
      },
      customCss: ['./site/site.css'],
      // The source repository, from one value (site/project.mjs), in the header of every page.
      social: [{ icon: 'github', label: 'Source code', href: REPO_URL }],
      sidebar: [
        {
          label: 'Tools',
          translations: { 'zh-CN': '工具' },
          items: ['lookup', 'dispatch', 'traces', 'embedding', 'get'],
        },
        {
          label: 'Why is my load uneven?',
          translations: { 'zh-CN': '负载为什么不均？' },
          items: ['server', 'scenarios', ...scenarioSlugs()],
        },
        {
          label: 'Guide',
          translations: { 'zh-CN': '指南' },
          items: chapterSlugs(),
        },
      ],
      // Long lines wrap rather than scroll: no unlabeled scroll regions, and readable on a phone.
      expressiveCode: { defaultProps: { wrap: true } },
      lastUpdated: false,
      pagination: true,
      // The pages live in content/, outside Starlight's own docs folder: without this its Markdown pipeline skips them,
      // and a `:::note[…]` aside prints as a paragraph of colons. Every aside carries its own title (content.test.ts),
      // because Starlight tells a page's language by the docs folder and would title an untitled Chinese aside "Note".
      markdown: { processedDirs: ['./content'], headingLinks: false },
    }),
    strictCsp(),
    // Last: it zips the finished output.
    packBuild(),
  ],
});
