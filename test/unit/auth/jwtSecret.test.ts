import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JWT_SECRET_FILE, loadOrCreateJwtSecret } from '../../../src/auth/jwtSecret.ts';

describe('loadOrCreateJwtSecret', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'jwt-secret-'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('uses GOVERNANCE_JWT_SECRET when set and writes nothing', async () => {
    expect(await loadOrCreateJwtSecret({ jwtSecret: 'from-env', dataDir })).toEqual({ secret: 'from-env', origin: 'environment' });
    await expect(stat(join(dataDir, JWT_SECRET_FILE))).rejects.toThrow();
  });

  it('creates a random secret readable only by its owner, and reuses it on the next start', async () => {
    const nested = join(dataDir, 'not-yet-there');
    const first = await loadOrCreateJwtSecret({ dataDir: nested });
    expect(first.origin).toBe('created');
    expect(first.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await stat(first.path!)).mode & 0o777).toBe(0o600);
    expect((await readFile(first.path!, 'utf8')).trim()).toBe(first.secret);

    const again = await loadOrCreateJwtSecret({ dataDir: nested });
    expect(again).toEqual({ secret: first.secret, origin: 'file', path: first.path });
  });

  it('gives two installs different secrets', async () => {
    const other = await mkdtemp(join(tmpdir(), 'jwt-secret-'));
    try {
      const a = await loadOrCreateJwtSecret({ dataDir });
      const b = await loadOrCreateJwtSecret({ dataDir: other });
      expect(a.secret).not.toBe(b.secret);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
