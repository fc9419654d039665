// The console is built into dist/console (npm run build, which npm ci runs through `prepare`) and served by the
// service at /console: everything it loads comes from the service itself, nothing from a CDN.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 300,
  },
  logLevel: 'warn',
});
