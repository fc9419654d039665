// admit with a Recorder allocates nothing per call (src/governance/README.md, "Hot path"): run as the service
// runs it (tallies flushed once per second of traffic), 3,000,000 admitted calls and 3,000,000 refused ones
// make no more young-generation collections than the summaries account for. An admit that allocated its request
// and decision (as V8 did when part of the fast path fell out of its inlining budget) made 18 or more in each.
// Every decision is still tallied: the recorded admitted and shed units are the calls admitted and refused.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const CALLS = 3_000_000;
/** A phase's scavenges allowed: the summaries and flushes of 30 seconds of traffic, a few kB each second. */
const MAX_SCAVENGES = 4;

interface Phase {
  scavenges: number;
  admitted: number;
}

function runChild(): Promise<{ calls: number; admittedPhase: Phase; recordedAdmitted: number; refusedPhase: Phase; recordedShed: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--allow-natives-syntax', '--import', 'tsx', 'test/unit/governance/recordedAdmit.child.ts', String(CALLS)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      const line = output.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`recordedAdmit.child exited with ${code}:\n${output}`));
      else resolve(JSON.parse(line));
    });
  });
}

describe('the recorded admit path', () => {
  it('allocates nothing per call, admitted or refused, and tallies every decision', async () => {
    const result = await runChild();
    console.log(`recorded admit, ${CALLS.toLocaleString('en-US')} calls a phase: scavenges admitted ${result.admittedPhase.scavenges}, refused ${result.refusedPhase.scavenges}`);
    expect(result.admittedPhase.admitted).toBe(CALLS);
    expect(result.recordedAdmitted).toBe(CALLS);
    expect(result.refusedPhase.admitted).toBeLessThan(CALLS / 50);
    expect(result.recordedShed).toBe(CALLS - result.refusedPhase.admitted);
    expect(result.admittedPhase.scavenges).toBeLessThanOrEqual(MAX_SCAVENGES);
    expect(result.refusedPhase.scavenges).toBeLessThanOrEqual(MAX_SCAVENGES);
  }, 120_000);
});
