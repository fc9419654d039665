// Whether dist/ is current is told by the content of what the build is made from (scripts/buildInputs.ts):
// a file touched or restored unchanged keeps the digest the build recorded; a changed byte, a new input or a
// renamed one does not; what the build does not read (a README, node_modules) never counts.
import { mkdtempSync, mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildInputs, buildInputsDigest } from '../../scripts/buildInputs.ts';

describe('the build inputs digest', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const tree = () => {
    const root = mkdtempSync(path.join(tmpdir(), 'gl-build-inputs-'));
    roots.push(root);
    mkdirSync(path.join(root, 'src/doors'), { recursive: true });
    mkdirSync(path.join(root, 'src/node_modules/x'), { recursive: true });
    writeFileSync(path.join(root, 'src/config.ts'), 'export const a = 1;\n');
    writeFileSync(path.join(root, 'src/doors/index.ts'), 'export {};\n');
    writeFileSync(path.join(root, 'src/README.md'), '# src\n');
    writeFileSync(path.join(root, 'src/node_modules/x/index.js'), '1');
    writeFileSync(path.join(root, 'package-lock.json'), '{}');
    return root;
  };

  it('lists the inputs the build reads, sorted, without READMEs or node_modules', () => {
    expect(buildInputs(tree())).toEqual(['package-lock.json', 'src/config.ts', 'src/doors/index.ts']);
  });

  it('keeps its digest when a file is touched or written again unchanged, and changes with content, a new input or a rename', () => {
    const root = tree();
    const built = buildInputsDigest(root);
    utimesSync(path.join(root, 'src/config.ts'), new Date(), new Date(Date.now() + 60_000));
    writeFileSync(path.join(root, 'src/doors/index.ts'), 'export {};\n');
    writeFileSync(path.join(root, 'src/README.md'), '# src, reworded\n');
    expect(buildInputsDigest(root)).toBe(built);

    writeFileSync(path.join(root, 'src/config.ts'), 'export const a = 2;\n');
    expect(buildInputsDigest(root)).not.toBe(built);
    writeFileSync(path.join(root, 'src/config.ts'), 'export const a = 1;\n');
    expect(buildInputsDigest(root)).toBe(built);

    writeFileSync(path.join(root, 'src/extra.ts'), '');
    expect(buildInputsDigest(root)).not.toBe(built);
    rmSync(path.join(root, 'src/extra.ts'));
    renameSync(path.join(root, 'src/doors/index.ts'), path.join(root, 'src/doors/main.ts'));
    expect(buildInputsDigest(root)).not.toBe(built);
  });
});
