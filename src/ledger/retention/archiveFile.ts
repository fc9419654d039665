// One archived day of admission summaries: an NDJSON file (one event a line, in the ledger's global order)
// compressed with gzip, and beside it a manifest with the file's sha256, its size and what it holds.
// Written to a temporary name and renamed, so a file under the final name is always whole.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { EventMetadata, Position, RecordedEvent } from '../eventStore.ts';
import { formatPosition, parsePosition } from '../eventStore.ts';

export const ARCHIVE_FORMAT = 'governance-ledger-archive/1';

export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  stream: string;
  /** The UTC day (YYYY-MM-DD) whose summaries the file holds. */
  day: string;
  /** The archive's file name, in the manifest's directory. */
  file: string;
  sha256: string;
  bytes: number;
  events: number;
  /** Positions (`commit:prepare`) of the first and last event, null for an empty day. */
  first: string | null;
  last: string | null;
  archivedAt: string;
  /**
   * The signed checkpoint (C2SP signed note) every line's `inclusionProof` leads to, when the ledger keeps its
   * Merkle tree (docs/verifiable-ledger.md, "Archived days"). Absent in archives of a ledger without one.
   */
  checkpoint?: string;
}

/** One line of the file. 64-bit numbers are strings, so nothing passes through a JavaScript number. */
export interface ArchiveLine {
  id: string;
  stream: string;
  revision: string;
  position: { commit: string; prepare: string };
  type: string;
  data: unknown;
  metadata: EventMetadata;
  recordedAt: string;
  /** The event's leaf in the ledger's Merkle tree, and its RFC 9162 inclusion proof (hex) to the manifest's checkpoint. */
  leaf?: number;
  inclusionProof?: string[];
}

export function archiveFileName(stream: string, day: string): string {
  return `${stream}-${day}.ndjson.gz`;
}

export function manifestPathOf(file: string): string {
  return file.replace(/\.ndjson\.gz$/, '') + '.manifest.json';
}

export interface WrittenArchive {
  file: string;
  manifestFile: string;
  manifest: ArchiveManifest;
}

/**
 * Writes the lines `pages` yields (each page a chunk of complete NDJSON lines, with the positions of its
 * first and last line) as `<dir>/<stream>-<day>.ndjson.gz` and its manifest. gzip runs on libuv's thread
 * pool, and pages are pulled only as fast as the file takes them.
 */
export async function writeArchive(
  dir: string,
  stream: string,
  day: string,
  pages: AsyncIterable<{ text: string; lines: number; first: Position; last: Position }>,
  options: { now?: () => number; checkpoint?: string | undefined } = {},
): Promise<WrittenArchive> {
  const now = options.now ?? Date.now;
  await mkdir(dir, { recursive: true });
  const name = archiveFileName(stream, day);
  const file = path.join(dir, name);
  const partial = path.join(dir, `.${name}.${randomBytes(4).toString('hex')}.partial`);
  const hash = createHash('sha256');
  let bytes = 0;
  let events = 0;
  let first: Position | undefined;
  let last: Position | undefined;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  async function* text() {
    for await (const page of pages) {
      first ??= page.first;
      last = page.last;
      events += page.lines;
      yield page.text;
    }
  }
  try {
    await pipeline(text(), createGzip(), tap, createWriteStream(partial, { flags: 'wx' }));
    await rename(partial, file);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  const manifest: ArchiveManifest = {
    format: ARCHIVE_FORMAT,
    stream,
    day,
    file: name,
    sha256: hash.digest('hex'),
    bytes,
    events,
    first: first ? formatPosition(first) : null,
    last: last ? formatPosition(last) : null,
    archivedAt: new Date(now()).toISOString(),
    ...(options.checkpoint !== undefined ? { checkpoint: options.checkpoint } : {}),
  };
  const manifestFile = manifestPathOf(file);
  const manifestPartial = `${manifestFile}.${randomBytes(4).toString('hex')}.partial`;
  await writeFile(manifestPartial, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(manifestPartial, manifestFile);
  return { file, manifestFile, manifest };
}

/** The archive's manifest does not match its file (or is missing or unreadable). */
export class ArchiveDamaged extends Error {
  override readonly name = 'ArchiveDamaged';
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`archive ${file}: ${reason}`);
  }
}

export async function readManifest(file: string): Promise<ArchiveManifest> {
  const manifestFile = manifestPathOf(file);
  let manifest: ArchiveManifest;
  try {
    manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as ArchiveManifest;
  } catch (error) {
    throw new ArchiveDamaged(file, `its manifest ${manifestFile} cannot be read (${(error as Error).message})`);
  }
  if (manifest.format !== ARCHIVE_FORMAT || typeof manifest.sha256 !== 'string' || typeof manifest.events !== 'number') {
    throw new ArchiveDamaged(file, `${manifestFile} is not a ${ARCHIVE_FORMAT} manifest`);
  }
  return manifest;
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/**
 * Checks the file against its manifest: the sha256 of the file as stored, its size, and the number of
 * events it holds. Resolves to the manifest; throws ArchiveDamaged on any difference.
 */
export async function verifyArchive(file: string): Promise<ArchiveManifest> {
  const manifest = await readManifest(file);
  const size = await stat(file).then(
    (found) => found.size,
    (error: unknown) => {
      throw new ArchiveDamaged(file, `cannot be read (${(error as Error).message})`);
    },
  );
  if (size !== manifest.bytes) throw new ArchiveDamaged(file, `${size} bytes, the manifest says ${manifest.bytes}`);
  const sha256 = await sha256OfFile(file);
  if (sha256 !== manifest.sha256) throw new ArchiveDamaged(file, `sha256 ${sha256}, the manifest says ${manifest.sha256}`);
  let events = 0;
  for await (const line of archiveLines(file)) if (line !== '') events++;
  if (events !== manifest.events) throw new ArchiveDamaged(file, `${events} events, the manifest says ${manifest.events}`);
  return manifest;
}

function archiveLines(file: string): AsyncIterable<string> {
  const gunzip = createReadStream(file).pipe(createGunzip());
  return createInterface({ input: gunzip, crlfDelay: Infinity });
}

/** The lines of an archive file as written, each parsed, with its line number; ArchiveDamaged on one that is not JSON. */
export async function* readArchiveLines(file: string): AsyncGenerator<{ number: number; line: ArchiveLine }> {
  let number = 0;
  for await (const text of archiveLines(file)) {
    number++;
    if (text === '') continue;
    let line: ArchiveLine;
    try {
      line = JSON.parse(text) as ArchiveLine;
    } catch (error) {
      throw new ArchiveDamaged(file, `line ${number} is not JSON (${(error as Error).message})`);
    }
    yield { number, line };
  }
}

/** The events of an archive file, in the order they were in the ledger, as the ledger's readers gave them. */
export async function* readArchive(file: string): AsyncGenerator<RecordedEvent> {
  for await (const { number, line } of readArchiveLines(file)) {
    const position = parsePosition(`${line.position?.commit}:${line.position?.prepare}`);
    if (!position || typeof line.id !== 'string' || typeof line.type !== 'string') throw new ArchiveDamaged(file, `line ${number} is not an archived event`);
    yield {
      id: line.id,
      stream: line.stream,
      revision: BigInt(line.revision),
      position,
      type: line.type,
      data: line.data,
      metadata: line.metadata,
      recordedAt: new Date(line.recordedAt),
    };
  }
}
