// What `npm run build` is made from, and a digest of its content. tsc compiles src/, projections/ and schema/
// (tsconfig.build.json), scripts/bundleService.ts bundles them with the packages of package-lock.json into
// dist/service/, and vite builds console/. The build's last step (scripts/stampBuild.ts) writes the digest to
// BUILD_STAMP, so whether dist/ is current can be told by content: a file restored from git or touched after
// the build, unchanged, is no change (test/support/replicas.ts, compiledServiceMissing).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export const BUILT_FROM = ['src', 'projections', 'schema', 'console', 'scripts/bundleService.ts', 'package-lock.json', 'tsconfig.build.json'];
/** Files whose change changes the build; a README does not. */
export const BUILT_FILE = /\.(ts|tsx|js|mjs|graphql|html|css|json)$/;
/** Where the build records the digest of what it was made from, relative to the repository's root. */
export const BUILD_STAMP = 'dist/build-inputs.sha256';

/** Every build input under `root`, relative and sorted (node_modules left out). */
export function buildInputs(root: string): string[] {
  const found: string[] = [];
  const walk = (relative: string) => {
    const file = path.join(root, relative);
    if (!existsSync(file)) return;
    if (statSync(file).isDirectory()) {
      for (const entry of readdirSync(file)) if (entry !== 'node_modules') walk(path.join(relative, entry));
    } else if (BUILT_FILE.test(relative)) found.push(relative);
  };
  for (const entry of BUILT_FROM) walk(entry);
  return found.sort();
}

/** SHA-256 over each input's path and content, in order. */
export function buildInputsDigest(root: string): string {
  const hash = createHash('sha256');
  for (const relative of buildInputs(root)) {
    const content = readFileSync(path.join(root, relative));
    hash.update(`${relative}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}
