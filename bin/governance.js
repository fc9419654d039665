#!/usr/bin/env node
// The package bin runs the compiled CLI (dist/, built by `npm run build`, which `npm ci` runs through the
// `prepare` script). A working tree without dist/ falls back to the TypeScript sources through tsx, so the bin
// also works while developing.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

const compiled = new URL('../dist/src/cli.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
