// `governance ledger public-key | export | verify`: the shell side of the verifiable ledger. Verifying a file
// opens no database and no connection: the file and the public key are all it reads.
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import type { Db } from '../../db/db.ts';
import type { EventStore } from '../eventStore.ts';
import { isArchiveFile, verifyArchiveFile } from './archiveProofs.ts';
import { exportLedgerLines, verifyStoredLedger, type ExportRange } from './exportLedger.ts';
import { formatVerifierKey, parseVerifierKey, type VerifierKey } from './signedNote.ts';
import { loadSigningKey } from './signingKey.ts';
import { ledgerOrigin } from './startVerifiableLedger.ts';
import { verifyExport, type Verdict } from './verify.ts';

export interface KeySettings {
  dataDir: string;
  signingKey?: string | undefined;
  origin?: string | undefined;
}

/** The verifier key of this ledger's signing key (made if there is none yet, as the service would). */
export async function ledgerPublicKey(db: Db, settings: KeySettings, ledger?: EventStore): Promise<string> {
  const origin = await ledgerOrigin(db, settings.origin, ledger);
  return formatVerifierKey(await loadSigningKey({ signingKey: settings.signingKey, dataDir: settings.dataDir, origin }));
}

/** A --from / --to value: a leaf index (a whole number) or an instant (ISO 8601). */
export function parseBound(text: string | undefined, name: string): number | Date | undefined {
  if (text === undefined) return undefined;
  if (/^\d+$/.test(text)) {
    const leaf = Number(text);
    if (Number.isSafeInteger(leaf)) return leaf;
  }
  const at = new Date(text);
  if (/^\d{4}-\d{2}-\d{2}/.test(text) && !Number.isNaN(at.getTime())) return at;
  throw new RangeError(`${name} "${text}" is neither a leaf index (a whole number) nor an instant (ISO 8601, e.g. 2026-12-01T00:00:00Z)`);
}

/**
 * Writes the export to `out` (under a temporary name, then renamed: a file under its name is whole). With
 * `ledger` (EVENTSTORE_URL) the events are read through the port.
 */
export async function exportToFile(db: Db, range: ExportRange, out: string, ledger?: EventStore): Promise<number> {
  const lines = await exportLedgerLines(db, range, ledger);
  const temporary = `${out}.tmp`;
  const stream = createWriteStream(temporary);
  let count = -1;
  for await (const line of lines) {
    if (!stream.write(`${line}\n`)) await once(stream, 'drain');
    count++;
  }
  stream.end();
  await once(stream, 'finish');
  await rename(temporary, out);
  return count;
}

/** --public-key: the vkey text itself, or a file holding it. */
export async function readVerifierKey(text: string): Promise<VerifierKey> {
  const vkey = /^[^\s+]+\+[0-9a-f]{8}\+/.test(text) ? text : (await readFile(text, 'utf8')).trim();
  return parseVerifierKey(vkey);
}

/** `governance ledger verify FILE`: offline. FILE is an export, or an archive file of a day (gzip). */
export async function verifyFile(file: string, publicKey: string, sinceFile?: string): Promise<Verdict> {
  const key = await readVerifierKey(publicKey);
  if (await isArchiveFile(file)) {
    if (sinceFile !== undefined) return { ok: false, reason: '--since applies to an export: an archive file carries inclusion proofs, no consistency proof' };
    return verifyArchiveFile(file, key);
  }
  const since = sinceFile !== undefined ? await readFile(sinceFile, 'utf8') : undefined;
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  try {
    return await verifyExport(lines, key, { since });
  } finally {
    lines.close();
  }
}

/** `governance ledger verify` without a file: the stored ledger, with --public-key or this ledger's own key. */
export async function verifyDatabase(db: Db, settings: KeySettings, publicKey?: string, ledger?: EventStore): Promise<Verdict> {
  const key = publicKey !== undefined ? await readVerifierKey(publicKey) : parseVerifierKey(await ledgerPublicKey(db, settings, ledger));
  return verifyStoredLedger(db, key, ledger);
}

/** The one line a verify prints. */
export function describeVerdict(verdict: Verdict): string {
  if (verdict.ok) return verdict.summary;
  const where = verdict.eventId ? ` (event ${verdict.eventId}${verdict.leaf !== undefined ? `, leaf ${verdict.leaf}` : ''})` : verdict.leaf !== undefined ? ` (leaf ${verdict.leaf})` : '';
  return `FAILED${where}: ${verdict.reason}`;
}
