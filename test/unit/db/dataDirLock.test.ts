import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataDirInUse, LOCK_FILE, lockDataDir } from '../../../src/db/dataDirLock.ts';

describe('embedded data directory lock', () => {
  it('refuses a second opener while held, and lets it in once released', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gl-lock-'));
    const release = await lockDataDir(dir);
    expect(await readFile(path.join(dir, LOCK_FILE), 'utf8')).toBe(String(process.pid));
    await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirInUse);
    await release();
    const again = await lockDataDir(dir);
    await again();
  });

  it('takes over a lock left by a process that no longer runs', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gl-lock-'));
    // Far above Linux's pid_max, so no process can have it.
    await writeFile(path.join(dir, LOCK_FILE), '99999999');
    const release = await lockDataDir(dir);
    expect(await readFile(path.join(dir, LOCK_FILE), 'utf8')).toBe(String(process.pid));
    await release();
  });
});
