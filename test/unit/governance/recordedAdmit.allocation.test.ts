// admit with a Recorder allocates nothing per call (src/governance/README.md, "Hot path"): run as the service
// runs it (tallies flushed once per second of traffic), 3,000,000 admitted calls and 3,000,000 refused ones
// make no more young-generation collections than the summaries account for. An admit that allocated its request
// and decision (as V8 did when part of the fast path fell out of its inlining budget) made 18 or more in each.
// Every decision is still tallied: the recorded admitted and shed units are the calls admitted and refused.
// Which calls V8 inlines depends on its budget and on the feedback of the moment, so the loop also runs with
// smaller budgets (--max-inlined-bytecode-size-cumulative; V8's own is 920): at 300 and 600, before the refusal
// kept its numbers out of its calls, 3,000,000 refusals made 12 collections in most runs, as one run in CI did
// at V8's own budget. (Below 250 admit itself is left out of its caller, whose decision it then copies.)
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
  recordedAdmitted: number;
  recordedShed: number;
  /** V8's optimisation status (%GetOptimizationStatus) of each function the phase runs hot, at its start and end. */
  statusAtStart: Record<string, number>;
  statusAtEnd: Record<string, number>;
}

/** V8's inlining budgets the loop runs at: its own (none given), then two smaller ones. */
const BUDGETS: readonly (readonly [string, number | undefined])[] = [["V8's own", undefined], ['300', 300], ['600', 600]];

function runChild(budget: number | undefined): Promise<{ calls: number; admittedPhase: Phase; refusedPhase: Phase }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(budget === undefined ? [] : [`--max-inlined-bytecode-size-cumulative=${budget}`]), '--expose-gc', '--allow-natives-syntax', '--import', 'tsx', 'test/unit/governance/recordedAdmit.child.ts', String(CALLS)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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
  it.each(BUDGETS)('allocates nothing per call, admitted or refused, and tallies every decision (inlining budget %s)', async (name, budget) => {
    const result = await runChild(budget);
    console.log(`recorded admit, ${CALLS.toLocaleString('en-US')} calls a phase, inlining budget ${name}: scavenges admitted ${result.admittedPhase.scavenges}, refused ${result.refusedPhase.scavenges}`);
    const { admittedPhase, refusedPhase } = result;
    expect(admittedPhase.admitted).toBe(CALLS);
    expect(admittedPhase.recordedAdmitted).toBe(CALLS);
    expect(refusedPhase.admitted).toBeLessThan(CALLS / 50);
    expect(refusedPhase.recordedAdmitted).toBe(refusedPhase.admitted);
    expect(refusedPhase.recordedShed).toBe(CALLS - refusedPhase.admitted);
    expect(admittedPhase.scavenges, JSON.stringify(admittedPhase)).toBeLessThanOrEqual(MAX_SCAVENGES);
    expect(refusedPhase.scavenges, JSON.stringify(refusedPhase)).toBeLessThanOrEqual(MAX_SCAVENGES);
  }, 120_000);
});
