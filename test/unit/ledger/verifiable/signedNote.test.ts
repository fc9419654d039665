import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  formatCheckpoint,
  formatVerifierKey,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
  signerKey,
  verifyCheckpoint,
  verifyNote,
} from '../../../../src/ledger/verifiable/index.ts';

describe('C2SP signed notes and checkpoints', () => {
  it('verifies the signed-note specification test vector', () => {
    const key = parseVerifierKey('example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k');
    const note =
      'This is an example message.\n\n' +
      '\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';
    expect(verifyNote(note, key)).toEqual({ ok: true, text: 'This is an example message.\n' });
    // One changed byte in the text, and the signature no longer holds.
    expect(verifyNote(note.replace('example message', 'example massage'), key).ok).toBe(false);
  });

  it('signs a checkpoint that verifies with its own vkey and with no other key', () => {
    const key = signerKey('governance.example/ledger', generateKeyPairSync('ed25519').privateKey);
    const vkey = formatVerifierKey(key);
    expect(vkey).toMatch(/^governance\.example\/ledger\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    const body = formatCheckpoint({ origin: key.name, treeSize: 42, rootHash: Buffer.alloc(32, 7) });
    expect(body).toBe(`governance.example/ledger\n42\n${Buffer.alloc(32, 7).toString('base64')}\n`);
    const note = signNote(body, key);
    const verdict = verifyCheckpoint(note, parseVerifierKey(vkey));
    expect(verdict.ok && verdict.checkpoint.treeSize).toBe(42);

    const other = signerKey('governance.example/ledger', generateKeyPairSync('ed25519').privateKey);
    expect(verifyCheckpoint(signNote(body, other), parseVerifierKey(vkey))).toMatchObject({ ok: false });
    // A note signed by the right name but another key fails, and one carrying both signatures passes on ours.
    const both = signNote(body, key).trimEnd() + '\n' + signNote(body, other).split('\n\n')[1];
    expect(verifyCheckpoint(both, parseVerifierKey(vkey)).ok).toBe(true);
  });

  it('round-trips verifier keys whose base64 holds "+" and "/"', () => {
    let withPlus = 0;
    for (let i = 0; i < 200; i++) {
      const key = signerKey('governance.example/ledger', generateKeyPairSync('ed25519').privateKey);
      const vkey = formatVerifierKey(key);
      if (vkey.split('+').length > 3) withPlus++;
      expect(parseVerifierKey(vkey).raw.equals(key.raw)).toBe(true);
    }
    console.log(`200 keys round-tripped, ${withPlus} with a "+" in their base64`);
    expect(withPlus).toBeGreaterThan(0);
  });

  it('refuses malformed checkpoints and keys', () => {
    expect(() => parseCheckpoint('origin\n01\nAAAA\n')).toThrow(/leading zeros/);
    expect(() => parseCheckpoint('origin\n1\nAAAA\n')).toThrow(/32 bytes/);
    expect(() => parseVerifierKey('example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k')).toThrow(/does not match/);
    expect(parseCheckpoint(`o\n0\n${Buffer.alloc(32).toString('base64')}\n`).treeSize).toBe(0);
  });
});
