#!/usr/bin/env node
// The package bin runs the TypeScript sources through tsx, so `governance` works from a plain clone.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
