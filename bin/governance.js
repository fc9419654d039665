#!/usr/bin/env -S node --v8-pool-size=1
// The package bin runs the compiled CLI, bundled into dist/service/ (built by `npm run build`, which `npm ci`
// runs through the `prepare` script). A working tree without dist/ falls back to the TypeScript sources through
// tsx, so the bin also works while developing. GOVERNANCE_RUN_SOURCES=1 runs the sources even where dist/
// exists (tests that start the service through `npm start` must not run a dist/ older than the code under
// test). The first line and `npm start` pass the service's node flags (src/gcTuning.ts, SERVICE_NODE_FLAGS).
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const compiled = new URL('../dist/service/cli.js', import.meta.url);
if (existsSync(compiled) && process.env.GOVERNANCE_RUN_SOURCES !== '1') {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
