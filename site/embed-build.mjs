// The embed script for other people's pages: after `astro build`, a second
// Vite build writes `<outDir>/embed/reuseport-lab.js` (a stable name a course
// page can link to) and its lazily loaded chunks and wasm under
// `<outDir>/embed/`, all addressed relative to the script itself, so it works
// from any base path and any origin (with CORS: see README). In `astro dev`
// the same URL serves a module that imports the source entry.
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import traceValidator from './trace-validator-plugin.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = fileURLToPath(new URL('../src/embed/index.ts', import.meta.url));

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
                entryFileNames: 'reuseport-lab.js',
                chunkFileNames: 'chunks/[name]-[hash].js',
                assetFileNames: 'assets/[name]-[hash][extname]',
              },
            },
          },
        });
        logger.info(`embed script: ${outDir}reuseport-lab.js`);
      },
    },
  };
}
