// C2SP signed-note (c2sp.org/signed-note) with Ed25519 keys, and the C2SP tlog-checkpoint body it carries
// (c2sp.org/tlog-checkpoint). Signing and verifying are node:crypto's Ed25519 (RFC 8032); this file only
// lays out the bytes the specifications name.
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

const ED25519 = 0x01;
const SIGNATURE_PREFIX = '\u2014 ';
// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the raw 32-byte key follows it.
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface VerifierKey {
  name: string;
  /** Big-endian uint32: SHA-256(name || 0x0A || 0x01 || public key)[:4]. */
  keyId: number;
  publicKey: KeyObject;
  raw: Buffer;
}

export interface SignerKey extends VerifierKey {
  privateKey: KeyObject;
}

/** A note, a signer's key or a checkpoint that does not follow its specification. */
export class MalformedNote extends Error {
  override readonly name = 'MalformedNote';
}

export function keyIdOf(name: string, rawPublicKey: Buffer): number {
  const digest = createHash('sha256').update(name, 'utf8').update(Buffer.from([0x0a, ED25519])).update(rawPublicKey).digest();
  return digest.readUInt32BE(0);
}

export function rawPublicKey(publicKey: KeyObject): Buffer {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return Buffer.from(der.subarray(der.length - 32));
}

export function publicKeyFromRaw(raw: Buffer): KeyObject {
  if (raw.length !== 32) throw new MalformedNote(`an Ed25519 public key is 32 bytes, got ${raw.length}`);
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

function checkKeyName(name: string) {
  if (name.length === 0 || /[\s+]/u.test(name)) throw new MalformedNote(`a key name is non-empty, without spaces or "+": ${JSON.stringify(name)}`);
}

export function signerKey(name: string, privateKey: KeyObject): SignerKey {
  checkKeyName(name);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new MalformedNote(`the signing key is ${privateKey.asymmetricKeyType}, not ed25519`);
  const publicKey = createPublicKey(privateKey);
  const raw = rawPublicKey(publicKey);
  return { name, keyId: keyIdOf(name, raw), publicKey, raw, privateKey };
}

export function signerKeyFromPem(name: string, pem: string): SignerKey {
  return signerKey(name, createPrivateKey(pem));
}

/** The verifier key text: `<name>+<hex key id>+<base64(0x01 || public key)>`. */
export function formatVerifierKey(key: VerifierKey): string {
  return `${key.name}+${key.keyId.toString(16).padStart(8, '0')}+${Buffer.concat([Buffer.from([ED25519]), key.raw]).toString('base64')}`;
}

export function parseVerifierKey(text: string): VerifierKey {
  // The name has no "+", the id is 8 hex digits; the base64 key after them may hold "+" of its own.
  const trimmed = text.trim();
  const plus = trimmed.indexOf('+');
  if (plus < 0 || trimmed[plus + 9] !== '+') throw new MalformedNote('a verifier key is <name>+<key id>+<key>');
  const [name, hexId, encoded] = [trimmed.slice(0, plus), trimmed.slice(plus + 1, plus + 9), trimmed.slice(plus + 10)];
  checkKeyName(name);
  if (!/^[0-9a-f]{8}$/.test(hexId)) throw new MalformedNote('a verifier key id is 8 lowercase hex digits');
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length !== 33 || bytes[0] !== ED25519) throw new MalformedNote('only Ed25519 verifier keys (type 0x01, 32 bytes) are supported');
  const raw = bytes.subarray(1);
  const keyId = Number.parseInt(hexId, 16);
  if (keyIdOf(name, raw) !== keyId) throw new MalformedNote(`the verifier key id ${hexId} does not match its name and key`);
  return { name, keyId, publicKey: publicKeyFromRaw(raw), raw };
}

export interface NoteSignature {
  name: string;
  keyId: number;
  signature: Buffer;
}

export interface ParsedNote {
  /** The signed text, ending in a newline. */
  text: string;
  signatures: NoteSignature[];
}

export function signNote(text: string, key: SignerKey): string {
  checkText(text);
  const signature = sign(null, Buffer.from(text, 'utf8'), key.privateKey);
  const id = Buffer.alloc(4);
  id.writeUInt32BE(key.keyId);
  return `${text}\n${SIGNATURE_PREFIX}${key.name} ${Buffer.concat([id, signature]).toString('base64')}\n`;
}

function checkText(text: string) {
  if (!text.endsWith('\n')) throw new MalformedNote('a note text ends with a newline');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/u.test(text)) throw new MalformedNote('a note holds no control characters but newlines');
}

export function parseNote(note: string): ParsedNote {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new MalformedNote('a signed note is its text, a blank line and signature lines');
  const text = note.slice(0, split + 1);
  checkText(text);
  const lines = note.slice(split + 2).split('\n');
  if (lines.at(-1) !== '') throw new MalformedNote('a signature line ends with a newline');
  lines.pop();
  if (lines.length === 0) throw new MalformedNote('a signed note has at least one signature');
  const signatures = lines.map((line) => {
    if (!line.startsWith(SIGNATURE_PREFIX)) throw new MalformedNote('a signature line starts with an em dash and a space');
    const rest = line.slice(SIGNATURE_PREFIX.length);
    const space = rest.lastIndexOf(' ');
    if (space <= 0) throw new MalformedNote('a signature line is "— <name> <base64>"');
    const bytes = Buffer.from(rest.slice(space + 1), 'base64');
    if (bytes.length < 5) throw new MalformedNote('a signature holds a key id and a signature');
    return { name: rest.slice(0, space), keyId: bytes.readUInt32BE(0), signature: Buffer.from(bytes.subarray(4)) };
  });
  return { text, signatures };
}

export type NoteVerdict = { ok: true; text: string } | { ok: false; reason: string };

/**
 * Verifies a note against one known key: a signature by that key (name and id) must be there and valid;
 * signatures by other keys are ignored, as the specification says.
 */
export function verifyNote(note: string, key: VerifierKey): NoteVerdict {
  let parsed: ParsedNote;
  try {
    parsed = parseNote(note);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  const mine = parsed.signatures.filter((each) => each.name === key.name && each.keyId === key.keyId);
  if (mine.length === 0) return { ok: false, reason: `no signature by the key ${key.name}+${key.keyId.toString(16).padStart(8, '0')}` };
  for (const each of mine) {
    if (!verify(null, Buffer.from(parsed.text, 'utf8'), key.publicKey, each.signature)) {
      return { ok: false, reason: `the signature by ${key.name} does not verify` };
    }
  }
  return { ok: true, text: parsed.text };
}

/** A C2SP tlog-checkpoint body. */
export interface TreeCheckpoint {
  origin: string;
  treeSize: number;
  rootHash: Buffer;
}

export function formatCheckpoint(checkpoint: TreeCheckpoint): string {
  checkKeyName(checkpoint.origin);
  return `${checkpoint.origin}\n${checkpoint.treeSize}\n${checkpoint.rootHash.toString('base64')}\n`;
}

export function parseCheckpoint(text: string): TreeCheckpoint {
  const lines = text.split('\n');
  if (lines.length < 4 || lines.at(-1) !== '') throw new MalformedNote('a checkpoint is origin, tree size and root hash, each on a line');
  const [origin, size, root] = lines as [string, string, string];
  if (origin.length === 0) throw new MalformedNote('a checkpoint names its origin');
  if (!/^(0|[1-9]\d*)$/.test(size) || !Number.isSafeInteger(Number(size))) throw new MalformedNote(`a checkpoint's tree size is a decimal without leading zeros: ${size}`);
  const rootHash = Buffer.from(root, 'base64');
  if (rootHash.length !== 32 || rootHash.toString('base64') !== root) throw new MalformedNote('a checkpoint root hash is 32 bytes in standard base64');
  return { origin, treeSize: Number(size), rootHash };
}

export type CheckpointVerdict = { ok: true; checkpoint: TreeCheckpoint } | { ok: false; reason: string };

/** A signed checkpoint verified against the log's key: the signature, then the body, whose origin is the key's name. */
export function verifyCheckpoint(note: string, key: VerifierKey): CheckpointVerdict {
  const verdict = verifyNote(note, key);
  if (!verdict.ok) return verdict;
  let checkpoint: TreeCheckpoint;
  try {
    checkpoint = parseCheckpoint(verdict.text);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  if (checkpoint.origin !== key.name) return { ok: false, reason: `the checkpoint's origin ${checkpoint.origin} is not the key's name ${key.name}` };
  return { ok: true, checkpoint };
}
