import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// Every HTML entry page of the site. Add new pages here (multi-page build).
const pages = ['index.html', 'dispatch.html'];

export default defineConfig({
  root,
  // Relative asset URLs, so the built site also works when served under a sub-path.
  base: './',
  server: { host: '127.0.0.1', port: 5173, strictPort: true },
  preview: { host: '127.0.0.1', port: 4173, strictPort: true },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Vite 8 bundles with Rolldown; `rollupOptions` is a deprecated alias of this.
    rolldownOptions: {
      input: Object.fromEntries(pages.map((p) => [p.replace(/\.html$/, ''), resolve(root, p)])),
    },
  },
});
