// Files shipped beside the code (migrations/, schema/) are found from the package root rather than from this
// file's own folder, because the same module runs from src/ (tsx, tests) and from dist/src/ (compiled), one
// folder deeper.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'migrations'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package root with migrations/ above ${from}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

/** A path inside the package, e.g. `packagePath('migrations')`. */
export const packagePath = (...parts: string[]): string => path.join(PACKAGE_ROOT, ...parts);
