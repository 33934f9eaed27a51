// The embed script for other people's pages: after `astro build`, a second
// Vite build writes `<outDir>/embed/reuseport-lab-main.js`, and beside it the
// stable name a course page links to, `reuseport-lab.js`, a small classic
// script that imports it and, where the import fails (a host without CORS),
// says so in the widget elements (src/embed/bootstrap.js). The lazily loaded
// chunks and wasm go under
// `<outDir>/embed/`, all addressed relative to the script itself, so it works
// from any base path and any origin (with CORS: see README). In `astro dev`
// the same URL serves a module that imports the source entry.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import traceValidator from './trace-validator-plugin.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = fileURLToPath(new URL('../src/embed/index.ts', import.meta.url));
const bootstrap = fileURLToPath(new URL('../src/embed/bootstrap.js', import.meta.url));

/** The loader as it ships: its sentences (`ui.embed.unreachable.*` of each catalogue) written in at its marker. */
function bootstrapWithWords() {
  const words = {};
  for (const lang of ['en', 'zh-CN']) {
    const table = JSON.parse(readFileSync(fileURLToPath(new URL(`../messages/${lang}.json`, import.meta.url)), 'utf8'));
    const prefix = 'ui.embed.unreachable.';
    words[lang] = Object.fromEntries(Object.entries(table).flatMap(([k, v]) => (k.startsWith(prefix) ? [[k.slice(prefix.length), v]] : [])));
  }
  const marker = '/* embed-build: words */ {}';
  const source = readFileSync(bootstrap, 'utf8');
  if (!source.includes(marker)) throw new Error(`src/embed/bootstrap.js: the marker ${marker} where its words go is missing`);
  return source.replace(marker, JSON.stringify(words));
}

export default function embedBuild() {
  let base = '/';
  return {
    name: 'reuseport-embed',
    hooks: {
      'astro:config:done': ({ config }) => {
        base = config.base.replace(/\/?$/, '/');
      },
      'astro:server:setup': ({ server }) => {
        server.middlewares.use((req, res, next) => {
          if (req.url?.split('?')[0] !== `${base}embed/reuseport-lab.js`) return next();
          res.setHeader('content-type', 'text/javascript');
          res.setHeader('access-control-allow-origin', '*');
          res.end(`import ${JSON.stringify(`${base}@fs${entry}`)};\n`);
        });
      },
      'astro:build:done': async ({ dir, logger }) => {
        const outDir = fileURLToPath(new URL('embed/', dir));
        await build({
          configFile: false,
          root,
          base: './',
          logLevel: 'warn',
          plugins: [traceValidator()],
          worker: { format: 'es', plugins: () => [traceValidator()] },
          build: {
            outDir,
            // The iframe pages (/embed/<name>/) are already here: astro build empties outDir before it starts.
            emptyOutDir: false,
            target: 'es2022',
            copyPublicDir: false,
            assetsInlineLimit: 0,
            rollupOptions: {
              input: entry,
              preserveEntrySignatures: false,
              output: {
                entryFileNames: 'reuseport-lab-main.js',
                chunkFileNames: 'chunks/[name]-[hash].js',
                assetFileNames: 'assets/[name]-[hash][extname]',
              },
            },
          },
        });
        writeFileSync(`${outDir}reuseport-lab.js`, bootstrapWithWords());
        logger.info(`embed script: ${outDir}reuseport-lab.js`);
      },
    },
  };
}
