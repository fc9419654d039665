// The ledger's Ed25519 signing key: GOVERNANCE_LEDGER_SIGNING_KEY (PKCS#8 PEM text, or the path of a file
// holding it), else <GOVERNANCE_DATA_DIR>/ledger-signing-key.pem, made on first use (mode 0600).
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { signerKeyFromPem, type SignerKey } from './signedNote.ts';

export const SIGNING_KEY_FILE = 'ledger-signing-key.pem';

export interface SigningKeySource {
  /** GOVERNANCE_LEDGER_SIGNING_KEY. */
  signingKey?: string | undefined;
  /** GOVERNANCE_DATA_DIR. */
  dataDir: string;
  /** The origin: the log's name in checkpoints and the key's name. */
  origin: string;
}

export async function loadSigningKey(source: SigningKeySource, options: { create?: boolean } = {}): Promise<SignerKey> {
  if (source.signingKey) {
    const pem = source.signingKey.includes('-----BEGIN') ? source.signingKey : await readFile(source.signingKey, 'utf8');
    return signerKeyFromPem(source.origin, pem);
  }
  const file = path.join(source.dataDir, SIGNING_KEY_FILE);
  try {
    return signerKeyFromPem(source.origin, await readFile(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || options.create === false) throw error;
  }
  await mkdir(source.dataDir, { recursive: true });
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // 'wx': two processes starting at once do not overwrite each other's key; the loser reads the winner's.
  await writeFile(file, pem, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return signerKeyFromPem(source.origin, await readFile(file, 'utf8'));
}

/** The default origin: a schema-less URL naming this ledger by its identity (migration 0090). */
export function defaultOrigin(ledgerId: string): string {
  return `governance-ledger.invalid/${ledgerId}`;
}
