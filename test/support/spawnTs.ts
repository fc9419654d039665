// A TypeScript entry point of this repository run as a child process (node --import tsx, from the repository's
// root), for e2e suites that need a real process to kill or restart: its output is kept for failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface SpawnedTs {
  child: ChildProcess;
  /** Everything the child wrote to stdout and stderr so far, interleaved as it arrived. */
  output: () => string;
  /** The exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

/** Runs `args` (a .ts file relative to the repository's root, then its arguments) with `env` over this process's. */
export function spawnTs(args: string[], env: Record<string, string>, stdin: 'pipe' | 'ignore' = 'ignore'): SpawnedTs {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: [stdin, 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
