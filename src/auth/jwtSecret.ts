// The HS256 secret when none is configured: a random one kept in the data directory, so tokens minted with
// `governance token` keep working across restarts. There is deliberately no built-in default secret: a
// default would be the same on every install and anyone could mint an OPERATOR token for it.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { MIN_JWT_SECRET_BYTES } from '../config.ts';

export interface JwtSecretSettings {
  jwtSecret?: string;
  dataDir: string;
}

export interface JwtSecret {
  secret: string;
  /** Where it came from: the environment, a file created earlier, or a file created just now. */
  origin: 'environment' | 'file' | 'created';
  path?: string;
}

export const JWT_SECRET_FILE = 'jwt-secret';

export async function loadOrCreateJwtSecret(settings: JwtSecretSettings): Promise<JwtSecret> {
  if (settings.jwtSecret) return { secret: settings.jwtSecret, origin: 'environment' };
  const path = join(settings.dataDir, JWT_SECRET_FILE);
  await mkdir(settings.dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  try {
    // 'wx' fails when the file exists, so two processes starting at once cannot overwrite each other's secret.
    await writeFile(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return { secret, origin: 'created', path };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stored = (await readFile(path, 'utf8')).trim();
  if (Buffer.byteLength(stored, 'utf8') < MIN_JWT_SECRET_BYTES) {
    throw new Error(`${path} holds a secret under ${MIN_JWT_SECRET_BYTES} bytes: delete it to have a new secret created, or set GOVERNANCE_JWT_SECRET`);
  }
  return { secret: stored, origin: 'file', path };
}

/** Where a secret came from, for people: "GOVERNANCE_JWT_SECRET" or "the secret in /srv/data/jwt-secret". */
export function describeJwtSecret(jwt: JwtSecret): string {
  return jwt.origin === 'environment' ? 'GOVERNANCE_JWT_SECRET' : `the secret in ${resolve(jwt.path ?? '')}`;
}

/**
 * The secrets a local tool may sign with, first the one `governance token` uses: GOVERNANCE_JWT_SECRET when
 * set, then the data directory's file when it exists (created only when there is no other). A tool talking to a
 * running service tries them in turn (`governance demo`): a shell may export a secret that the service it talks
 * to, started with another environment, does not use.
 */
export async function jwtSecretCandidates(settings: JwtSecretSettings): Promise<JwtSecret[]> {
  const candidates: JwtSecret[] = [];
  if (settings.jwtSecret) candidates.push({ secret: settings.jwtSecret, origin: 'environment' });
  const path = join(settings.dataDir, JWT_SECRET_FILE);
  try {
    const stored = (await readFile(path, 'utf8')).trim();
    if (Buffer.byteLength(stored, 'utf8') >= MIN_JWT_SECRET_BYTES) candidates.push({ secret: stored, origin: 'file', path });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (candidates.length === 0) candidates.push(await loadOrCreateJwtSecret(settings));
  return candidates;
}
