import { expect, it } from 'vitest';
import { eventBytes } from '../../../src/ledger/appendSize.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { startProjections } from '../../../src/ledger/projectionSet.ts';
import { INFERENCE_SPEND_STREAM } from '../../../src/ledger/catalog/inference.ts';
import { inferenceSpendProjection } from '../../../projections/inferenceSpend.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createInferenceSpendMeter } from '../../../src/metrics/inferenceSpendMeter.ts';
import { instrumentEventStore } from '../../../src/metrics/instrumentEventStore.ts';
import { inferenceSpendTrend, topInferenceSpenders } from '../../../src/metrics/trends/inferenceSpend.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { useFileLedger } from '../../support/fileLedger.ts';
import { waitForProjected } from './waitForProjected.ts';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 30);
const at = (ms: number) => new Date(ms);

describeOnEachStorage('AI inference spend on $name', (target) => {
  const ledger = useFileLedger(target);

  it('counts tokens instance-wide at once, and per tenant in the ledger in batches, then in the trend read model', async () => {
    const metrics = createMetrics({ service: 'ai-inference', processMetrics: false });
    let clock = T0;
    const meter = createInferenceSpendMeter(ledger.store, metrics, { now: () => clock, flushIntervalMs: 60_000 });
    try {
      expect(meter.record('acme', 100, 40)).toEqual({ status: 'recorded' });
      meter.record('acme', 10, 4);
      clock += 2_000;
      meter.record('acme', 1, 1);
      meter.record('globex', 500, 0);
      expect(meter.record('', 1, 1)).toMatchObject({ status: 'invalid', field: 'tenantId' });
      expect(meter.record('acme', -1, 1)).toMatchObject({ status: 'invalid', field: 'inputTokens' });
      expect(meter.record('acme', 1, 0.5)).toMatchObject({ status: 'invalid', field: 'outputTokens' });
      const text = await metrics.render();
      expect(text).toContain('devicechain_ai_inference_ai_inference_input_tokens_total 611');
      expect(text).toContain('devicechain_ai_inference_ai_inference_output_tokens_total 45');

      await meter.flush();
      const events = await ledger.store.readStream(INFERENCE_SPEND_STREAM);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual({
        entries: [
          { tenantId: 'acme', fromSecond: T0 / 1000, seconds: 3, inputTokens: 111, outputTokens: 45, requests: 3 },
          { tenantId: 'globex', fromSecond: T0 / 1000 + 2, seconds: 1, inputTokens: 500, outputTokens: 0, requests: 1 },
        ],
      });
    } finally {
      await meter.close();
    }

    const head = (await ledger.store.readStream(INFERENCE_SPEND_STREAM, { fromRevision: 'end', direction: 'backwards', maxCount: 1 }))[0]!;
    const projections = await startProjections(ledger.db, ledger.store, [inferenceSpendProjection]);
    await waitForProjected(ledger.db, projections, head.position).finally(() => projections.close());
    const range = { from: at(T0 - 3_600_000), to: at(T0 + 3_600_000) };
    expect(await topInferenceSpenders(ledger.db, { ...range, first: 5 })).toEqual([
      { tenantId: 'globex', inputTokens: 500, outputTokens: 0, requests: 1 },
      { tenantId: 'acme', inputTokens: 111, outputTokens: 45, requests: 3 },
    ]);
    expect(await inferenceSpendTrend(ledger.db, { tenantId: 'acme', ...range, bucket: 'MINUTE' })).toEqual([
      { start: at(T0 - 30_000), inputTokens: 111, outputTokens: 45, requests: 3 },
    ]);
  });

  it('retries a failed append as the same event, so an append whose answer was lost counts nothing twice', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const timed = instrumentEventStore(ledger.store, metrics);
    let loseNextAnswer = true;
    const flaky: EventStore = {
      ...timed,
      async append(stream, events, options) {
        const result = await timed.append(stream, events, options);
        if (loseNextAnswer) {
          loseNextAnswer = false;
          throw new Error('connection reset after commit');
        }
        return result;
      },
    };
    const before = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).length;
    const meter = createInferenceSpendMeter(flaky, metrics, { now: () => T0 + 86_400_000, flushIntervalMs: 60_000 });
    meter.record('initech', 7, 3);
    await expect(meter.flush()).rejects.toThrow('connection reset after commit');
    meter.record('initech', 1, 1);
    await meter.close();
    const events = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).slice(before);
    expect(events.map((event) => event.data)).toEqual([
      { entries: [{ tenantId: 'initech', fromSecond: T0 / 1000 + 86_400, seconds: 1, inputTokens: 7, outputTokens: 3, requests: 1 }] },
      { entries: [{ tenantId: 'initech', fromSecond: T0 / 1000 + 86_400, seconds: 1, inputTokens: 1, outputTokens: 1, requests: 1 }] },
    ]);
    // Three appends timed: the first (answer lost), its retry (stored once), the newer spend.
    expect(await metrics.render()).toContain('devicechain_governance_ledger_append_duration_seconds_count{outcome="ok"} 3');
  });

  it('appends at an explicit revision, and after another instance appended goes again at the revision the ledger reported', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const expectations: unknown[] = [];
    const watched: EventStore = {
      ...ledger.store,
      append(stream, events, options) {
        expectations.push(options?.expectedRevision);
        return ledger.store.append(stream, events, options);
      },
    };
    const before = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).length;
    const mine = createInferenceSpendMeter(watched, metrics, { now: () => T0 + 2 * 86_400_000, flushIntervalMs: 60_000 });
    const other = createInferenceSpendMeter(ledger.store, metrics, { now: () => T0 + 2 * 86_400_000, flushIntervalMs: 60_000 });
    try {
      mine.record('hooli', 1, 0);
      await mine.flush();
      other.record('pied-piper', 2, 0);
      await other.flush();
      mine.record('hooli', 3, 0);
      await mine.flush();
    } finally {
      await Promise.all([mine.close(), other.close()]);
    }
    const events = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).slice(before);
    expect(events.map((event) => (event.data as { entries: { tenantId: string; inputTokens: number }[] }).entries.map((each) => [each.tenantId, each.inputTokens]))).toEqual([
      [['hooli', 1]],
      [['pied-piper', 2]],
      [['hooli', 3]],
    ]);
    // Every append named a revision; the third one's was taken by the other meter and it went again.
    expect(expectations).toHaveLength(3);
    for (const each of expectations) expect(typeof each === 'bigint' || each === 'no_stream').toBe(true);
    expect(expectations[2]).toBe((expectations[1] as bigint) + 1n);
  });

  it('splits the spend of many tenants into appends of a bounded size, each tenant once', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const sizes: number[] = [];
    const watched: EventStore = {
      ...ledger.store,
      append(stream, events, options) {
        sizes.push(events.reduce((sum, event) => sum + eventBytes(event), 0));
        return ledger.store.append(stream, events, options);
      },
    };
    const before = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).length;
    const meter = createInferenceSpendMeter(watched, metrics, { now: () => T0 + 3 * 86_400_000, flushIntervalMs: 60_000, maxAppendBytes: 2_000 });
    const tenants = Array.from({ length: 60 }, (_, n) => `spender-${n}`);
    for (const tenant of tenants) meter.record(tenant, 5, 1);
    await meter.close();
    expect(sizes.length).toBeGreaterThan(3);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(2_000);
    const events = (await ledger.store.readStream(INFERENCE_SPEND_STREAM)).slice(before);
    expect(events.flatMap((event) => (event.data as { entries: { tenantId: string }[] }).entries.map((each) => each.tenantId))).toEqual(tenants);
  });

  it('times failed appends apart from successful ones', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const timed = instrumentEventStore(ledger.store, metrics);
    await expect(timed.append('', [{ type: 'X', data: {} }])).rejects.toThrow();
    expect(await metrics.render()).toContain('devicechain_governance_ledger_append_duration_seconds_count{outcome="error"} 1');
  });
});
