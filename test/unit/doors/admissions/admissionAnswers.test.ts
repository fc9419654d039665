// The admission API writes its answer from the Governor's own decision record, each distinct decision's text
// made once (src/doors/admissions/decisionText.ts). The answer must be the bytes JSON.stringify wrote for the
// objects Governor.admit returns, and every decision counted as admit counts it: two Governors over the same
// ceilings and the same clock, one behind the route over HTTP and one asked item by item with admit, give the
// same body and the same ledger summaries.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { asciiJson, createAdmissionRoutes } from '../../../../src/doors/admissions/admissionRoutes.ts';
import { readAdmissionItem } from '../../../../src/doors/admissions/admissionItem.ts';
import { Governor, InvalidAdmission, type AdmitRequest } from '../../../../src/governance/index.ts';
import { createServer, listen } from '../../../../src/http-server/server.ts';
import type { InferenceSpendMeter } from '../../../../src/metrics/index.ts';
import { CollectingRecorder, MemoryLimitSource } from '../../governance/memoryLimitSource.ts';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0, 250);
const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A Governor over small ceilings, a daily quota and a SHED allowance, on a clock that stands still. */
async function governorOnClock(clock: { ms: number }) {
  const limitSource = new MemoryLimitSource()
    .tenant('acme', {
      API_REQUESTS: { override: { ratePerSecond: 2 } },
      EGRESS: { override: { ratePerSecond: 3, burst: 4 } },
      PROVISIONING: { override: { ratePerSecond: 1, burst: 2 } },
      AI_INFERENCE: { override: { ratePerSecond: 1000, burst: 1000, quota: { period: 'DAY', limit: 5, timeZone: 'UTC' } } },
    })
    .tenant('beta', { API_REQUESTS: { override: { ratePerSecond: 5, burst: 5 } } });
  const recorder = new CollectingRecorder();
  const governor = new Governor({ limitSource, recorder, now: () => clock.ms });
  closers.push(() => governor.close());
  for (const tenant of ['acme', 'beta']) {
    governor.confirmTenant(tenant);
    governor.admit({ tenant, dimension: 'API_REQUESTS', units: 0, at: clock.ms });
  }
  await governor.loadsSettled();
  return { governor, recorder };
}

/** The admission routes over the Governor, on the clock, for a SERVICE caller, served on a port of their own. */
async function serveRoutes(governor: Governor, clock: { ms: number }, record: InferenceSpendMeter['record']): Promise<number> {
  const routes = createAdmissionRoutes({
    governor,
    inferenceSpend: { record },
    callers: { check: () => ({ status: 'ok', actor: { id: 'detection-engine', role: 'SERVICE' } }) },
    now: () => clock.ms,
  });
  const server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, routes);
  const { port } = await listen(server, 0, '127.0.0.1');
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return port;
}

/** What the route answered before it wrote text: admit's objects (or the item's error), stringified whole. */
function answeredByAdmit(governor: Governor, items: unknown[], nowMs: number): string {
  const request: AdmitRequest = { tenant: '', dimension: 'EGRESS', allowance: null, units: 0, at: 0, callerKey: undefined, charge: 'readings' };
  const decisions = items.map((item) => {
    const error = readAdmissionItem(item, nowMs, request);
    if (error !== null) return { error };
    try {
      return governor.admit(request);
    } catch (fault) {
      if (!(fault instanceof InvalidAdmission)) throw fault;
      return { error: { field: '', reason: fault.message } };
    }
  });
  return JSON.stringify({ decisions });
}

describe('the admission API answer', () => {
  it('is ASCII whatever an error says: asciiJson writes the same JSON value with \\u escapes', () => {
    for (const value of [{ error: { field: '', reason: 'plain' } }, { error: { field: 'x', reason: 'gateway-ü, 東京, 😀, \u2028, a lone \ud800' } }]) {
      const text = asciiJson(value);
      expect(text).toMatch(/^[\x20-\x7e]*$/);
      expect(JSON.parse(text)).toEqual(value);
    }
    expect(asciiJson({ reason: 'plain' })).toBe(JSON.stringify({ reason: 'plain' }));
  });

  it('of /v1/inference-usage is ASCII too, with the byte length in Content-Length, whatever the meter says', async () => {
    const clock = { ms: NOW };
    const { governor } = await governorOnClock(clock);
    const reason = 'over the gateway-ü budget (東京) 😀';
    const port = await serveRoutes(governor, clock, (tenantId) => (tenantId === 'acme' ? { status: 'recorded' } : { status: 'invalid', field: 'tenantId', message: reason }));
    const items = [
      { tenantId: 'acme', inputTokens: 1, outputTokens: 2 },
      { tenantId: 'beta', inputTokens: 1, outputTokens: 2 },
    ];
    const response = await fetch(`http://127.0.0.1:${port}/v1/inference-usage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    expect(response.status).toBe(200);
    const body = Buffer.from(await response.arrayBuffer());
    expect(Number(response.headers.get('content-length'))).toBe(body.length);
    expect(body.toString('latin1')).toMatch(/^[\x20-\x7e]*$/);
    expect(JSON.parse(body.toString('utf8'))).toEqual({ results: [{ recorded: true }, { error: { field: 'tenantId', reason } }] });
  });

  it('is the bytes JSON.stringify wrote for admit, decision for decision, and counts what admit counts', async () => {
    const clock = { ms: NOW };
    const routed = await governorOnClock(clock);
    const direct = await governorOnClock(clock);
    const port = await serveRoutes(routed.governor, clock, () => ({ status: 'recorded' }));

    // Admitted and refused (REJECT, SHED), never fits, past the day's quota, an unknown tenant, bad items, an
    // item with its own `at`, repeated so that kept texts are used again.
    const batch = (second: number) => [
      ...Array.from({ length: 4 }, () => ({ tenantId: 'acme', dimension: 'API_REQUESTS', units: 1 })),
      ...Array.from({ length: 7 }, () => ({ tenantId: 'beta', dimension: 'API_REQUESTS', units: 2 })),
      { tenantId: 'acme', dimension: 'EGRESS', allowance: 'DETECTION', units: 3 },
      { tenantId: 'acme', dimension: 'EGRESS', allowance: 'DETECTION', units: 3 },
      { tenantId: 'acme', dimension: 'EGRESS', allowance: 'CONNECTORS', units: 9 },
      { tenantId: 'acme', dimension: 'PROVISIONING', units: 5 },
      ...Array.from({ length: 4 }, () => ({ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 2 })),
      { tenantId: 'nobody', dimension: 'API_REQUESTS', units: 1 },
      { tenantId: 'acme', dimension: 'API_REQUESTS', units: 1, at: NOW + second * 1000 - 500, callerKey: 'gateway-ü' },
      { tenantId: 'bad name!', dimension: 'API_REQUESTS', units: 1 },
      { tenantId: 'acme', dimension: 'UNDELIVERED_COMMANDS', units: 1 },
      { tenantId: 'acme', dimension: 'API_REQUESTS', units: 0.5 },
      'not an object',
      { tenantId: 'acme', dimension: 'API_REQUESTS', units: 1, at: 'yesterday' },
    ];
    for (let second = 0; second < 4; second++) {
      clock.ms = NOW + second * 1000;
      // Odd seconds without the bad items: answers of decisions only, and answers with errors.
      const items = second % 2 === 0 ? batch(second) : batch(second).slice(0, -5);
      const response = await fetch(`http://127.0.0.1:${port}/v1/admissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ items }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      const body = Buffer.from(await response.arrayBuffer());
      expect(Number(response.headers.get('content-length'))).toBe(body.length);
      expect(body.toString('utf8')).toBe(answeredByAdmit(direct.governor, items, clock.ms));
    }
    await routed.governor.flush();
    await direct.governor.flush();
    // Summed per tenant, dimension, allowance (or cause) and second: either Recorder may flush on its own timer between two
    // requests, which splits a second's summary in two without changing a count. A second hit in both parts is one
    // hit second, as the Governor merges two tallies of a second (src/governance/tallies.ts).
    const byKey = (summaries: readonly object[]) => {
      const merged = new Map<string, Record<string, unknown>>();
      for (const summary of summaries as Record<string, unknown>[]) {
        const key = JSON.stringify([summary.tenantId, summary.dimension, summary.allowance, summary.cause, summary.fromSecond, summary.seconds]);
        const into = merged.get(key);
        if (into === undefined) merged.set(key, { ...summary });
        else for (const [field, value] of Object.entries(summary)) if (typeof value === 'number' && !['fromSecond', 'seconds'].includes(field)) into[field] = (into[field] as number) + value;
        if (into !== undefined && typeof into.hitSeconds === 'number') into.hitSeconds = Math.min(into.hitSeconds, summary.seconds as number);
      }
      return [...merged.values()].map((each) => JSON.stringify(each)).sort();
    };
    expect(byKey(routed.recorder.admissions)).toEqual(byKey(direct.recorder.admissions));
    expect(byKey(routed.recorder.unresolved)).toEqual(byKey(direct.recorder.unresolved));
    expect(routed.recorder.total('rejectedUnits')).toBeGreaterThan(0);
    expect(routed.recorder.total('shedUnits')).toBeGreaterThan(0);
  });
});
