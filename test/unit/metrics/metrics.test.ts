import { describe, expect, it } from 'vitest';
import { createMetrics, metricPrefix } from '../../../src/metrics/metrics.ts';
import { createMetricsRecorder } from '../../../src/metrics/metricsRecorder.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

function admission(overrides: Partial<AdmissionSummary>): AdmissionSummary {
  return admissionSummary({ fromSecond: 1_000, ...overrides });
}

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('metrics', () => {
  it('names every metric devicechain_<service>_, the service made a valid metric name', () => {
    expect(metricPrefix('governance')).toBe('devicechain_governance_');
    expect(metricPrefix('Event-Sources')).toBe('devicechain_event_sources_');
  });

  it('counts a batch of summaries per tenant, dimension and allowance, and unresolved ones by dimension and cause', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const recorder = createMetricsRecorder(metrics);
    await recorder.record(
      [
        admission({ admittedUnits: 100, shedUnits: 5, hitSeconds: 1 }),
        admission({ fromSecond: 1_001, admittedUnits: 50, shedUnits: 7, hitSeconds: 1 }),
        admission({ dimension: 'AI_INFERENCE', allowance: null, admittedUnits: 3, rejectedUnits: 2, hitSeconds: 1 }),
      ],
      [
        { tenantId: 'acme', dimension: 'INGEST', cause: 'unreachable', fromSecond: 1_000, seconds: 1, units: 10, messages: 1 },
        { tenantId: 'globex', dimension: 'INGEST', cause: 'unreachable', fromSecond: 1_000, seconds: 1, units: 4, messages: 1 },
        { tenantId: 'globex', dimension: 'INGEST', cause: 'unknown-tenant', fromSecond: 1_000, seconds: 1, units: 1, messages: 1 },
      ],
    );
    const text = await metrics.render();
    const p = 'devicechain_governance_governance_';
    expect(sample(text, `${p}admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="acme"}`)).toBe(150);
    expect(sample(text, `${p}shed_units_total{dimension="INGEST",allowance="LIVE",tenant="acme"}`)).toBe(12);
    expect(sample(text, `${p}limit_hit_seconds_total{dimension="INGEST",allowance="LIVE",tenant="acme"}`)).toBe(2);
    expect(sample(text, `${p}rejected_units_total{dimension="AI_INFERENCE",allowance="",tenant="acme"}`)).toBe(2);
    expect(sample(text, `${p}unresolved_admissions_total{dimension="INGEST",cause="unreachable"}`)).toBe(14);
    expect(sample(text, `${p}unresolved_admissions_total{dimension="INGEST",cause="unknown-tenant"}`)).toBe(1);
  });

  it('counts every refused message per outcome, one refused per message with no units included, and names a tenant by its refusals', async () => {
    let nowMs = 0;
    const metrics = createMetrics({ service: 'governance', namedTenants: 1, processMetrics: false, tenantLabels: { now: () => nowMs, refreshMs: 60_000 } });
    const recorder = createMetricsRecorder(metrics);
    // globex sends 67 units and takes the one named place; acme's 2,000 requests are refused on the per-message
    // charge (before decoding: no units) and 5 readings charges are shed.
    await recorder.record([admission({ tenantId: 'globex', admittedUnits: 67, admittedMessages: 1 })], []);
    await recorder.record(
      [admission({ allowance: 'HTTP', rejectedMessages: 2_000, hitSeconds: 1 }), admission({ shedUnits: 40, shedMessages: 5, hitSeconds: 1 })],
      [],
    );
    const p = 'devicechain_governance_governance_';
    let text = await metrics.render();
    expect(sample(text, `${p}refused_messages_total{dimension="INGEST",allowance="HTTP",tenant="_other",outcome="rejected"}`)).toBe(2_000);
    expect(sample(text, `${p}rejected_units_total{dimension="INGEST",allowance="HTTP",tenant="_other"}`)).toBeUndefined();
    // A minute on, the labels are chosen again: acme's refusals outweigh globex's units.
    nowMs = 61_000;
    await recorder.record([admission({ fromSecond: 1_061, allowance: 'HTTP', rejectedMessages: 3, hitSeconds: 1 })], []);
    text = await metrics.render();
    expect(metrics.tenants.named()).toEqual(['acme']);
    expect(sample(text, `${p}refused_messages_total{dimension="INGEST",allowance="HTTP",tenant="acme",outcome="rejected"}`)).toBe(3);
    expect(sample(text, `${p}admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="globex"}`)).toBeUndefined();
    // Retried summaries (the same objects, grown) count only what they gained.
    const retried = admission({ fromSecond: 1_062, shedMessages: 2, hitSeconds: 1 });
    await recorder.record([retried], []);
    retried.shedMessages = 5;
    await recorder.record([retried], []);
    text = await metrics.render();
    expect(sample(text, `${p}refused_messages_total{dimension="INGEST",allowance="LIVE",tenant="acme",outcome="shed"}`)).toBe(5);
    // Demoted in turn, acme's refused series go with its other series: the labels stay bounded.
    nowMs = 122_000;
    await recorder.record([admission({ tenantId: 'globex', fromSecond: 1_122, admittedUnits: 100_000, admittedMessages: 1_000 })], []);
    text = await metrics.render();
    expect(metrics.tenants.named()).toEqual(['globex']);
    expect(text).not.toMatch(/refused_messages_total\{[^}]*tenant="acme"/);
  });

  it('reads the pulled gauges from the sources at scrape time: largest backlogs by name, the rest as other', async () => {
    const metrics = createMetrics({ service: 'governance', namedTenants: 2, processMetrics: false });
    let overflow = false;
    let clamped = 0;
    let staleness: number | null = null;
    metrics.useSources({
      commandBacklogs: async () => [
        { tenantId: 'a', undelivered: 5, ceiling: 1000 },
        { tenantId: 'b', undelivered: 900, ceiling: 1000 },
        { tenantId: 'c', undelivered: 7, ceiling: 50 },
        { tenantId: 'd', undelivered: 1, ceiling: 1000 },
      ],
      projectionLags: async () => [{ projection: 'admission-trends', secondsBehind: 2.5 }],
      redisCounterFallback: () => true,
      nameOverflowInUse: () => overflow,
      clampedTallies: () => clamped,
      readReplicaStaleness: () => staleness,
      deferredRequests: () => 3,
    });
    let text = await metrics.render();
    const p = 'devicechain_governance_';
    expect(sample(text, `${p}governance_command_backlog{tenant="b"}`)).toBe(900);
    expect(sample(text, `${p}governance_command_backlog{tenant="c"}`)).toBe(7);
    expect(sample(text, `${p}governance_command_backlog{tenant="_other"}`)).toBe(6);
    expect(sample(text, `${p}governance_command_backlog_ceiling{tenant="c"}`)).toBe(50);
    expect(sample(text, `${p}governance_command_backlog{tenant="a"}`)).toBeUndefined();
    expect(sample(text, `${p}projection_lag_seconds{projection="admission-trends"}`)).toBe(2.5);
    expect(sample(text, `${p}governance_redis_fallback`)).toBe(1);
    expect(sample(text, `${p}governance_name_overflow_in_use`)).toBe(0);
    expect(sample(text, `${p}governance_clamped_tallies_total`)).toBe(0);
    expect(sample(text, `${p}http_requests_deferred_total`)).toBe(3);
    expect(sample(text, `${p}governance_read_replica_staleness_seconds`)).toBe(-1);
    overflow = true;
    clamped = 42;
    staleness = 0.25;
    text = await metrics.render();
    expect(sample(text, `${p}governance_name_overflow_in_use`)).toBe(1);
    expect(sample(text, `${p}governance_clamped_tallies_total`)).toBe(42);
    expect(sample(text, `${p}governance_read_replica_staleness_seconds`)).toBe(0.25);
  });

  it("reads each broker door's consumer at scrape time, one series per door, counts as counters", async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    const mqtt = { door: 'mqtt', connected: true, received: 7, acknowledged: 6, handlerFaults: 0, inHand: 1, oldestInHandMs: 2_500, connects: 2 };
    const sparkplug = { door: 'sparkplug', connected: false, received: 0, acknowledged: 0, handlerFaults: 1, inHand: 0, oldestInHandMs: 0, connects: 1 };
    metrics.useSources({ brokerDoors: () => [mqtt, sparkplug] });
    const p = 'devicechain_governance_door_broker_';
    let text = await metrics.render();
    expect(sample(text, `${p}connected{door="mqtt"}`)).toBe(1);
    expect(sample(text, `${p}connected{door="sparkplug"}`)).toBe(0);
    expect(sample(text, `${p}connects_total{door="mqtt"}`)).toBe(2);
    expect(sample(text, `${p}messages_received_total{door="mqtt"}`)).toBe(7);
    expect(sample(text, `${p}messages_acknowledged_total{door="mqtt"}`)).toBe(6);
    expect(sample(text, `${p}handler_faults_total{door="sparkplug"}`)).toBe(1);
    expect(sample(text, `${p}messages_in_hand{door="mqtt"}`)).toBe(1);
    expect(sample(text, `${p}oldest_in_hand_seconds{door="mqtt"}`)).toBe(2.5);
    expect(text).toContain(`# TYPE ${p}messages_received_total counter`);
    expect(text).toContain(`# TYPE ${p}oldest_in_hand_seconds gauge`);
    // The next scrape shows the values then, not their sum with the last.
    Object.assign(mqtt, { received: 9, acknowledged: 9, inHand: 0, oldestInHandMs: 0 });
    text = await metrics.render();
    expect(sample(text, `${p}messages_received_total{door="mqtt"}`)).toBe(9);
    expect(sample(text, `${p}messages_in_hand{door="mqtt"}`)).toBe(0);
    expect(sample(text, `${p}oldest_in_hand_seconds{door="mqtt"}`)).toBe(0);
  });

  it('adds the "other" sample a source folded itself to the tenants it folds, and never names it as a tenant', async () => {
    const metrics = createMetrics({ service: 'governance', namedTenants: 1, processMetrics: false });
    metrics.useSources({
      commandBacklogs: async () => [
        { tenantId: '_other', undelivered: 40, ceiling: 0 },
        { tenantId: 'a', undelivered: 5, ceiling: 1000 },
        { tenantId: 'b', undelivered: 3, ceiling: 1000 },
      ],
    });
    const text = await metrics.render();
    expect(sample(text, 'devicechain_governance_governance_command_backlog{tenant="a"}')).toBe(5);
    expect(sample(text, 'devicechain_governance_governance_command_backlog{tenant="_other"}')).toBe(43);
    expect(sample(text, 'devicechain_governance_governance_command_backlog_ceiling{tenant="_other"}')).toBeUndefined();
  });

  it('keeps a failing source’s last values and counts the failure, without failing the scrape', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    let failing = false;
    metrics.useSources({
      commandBacklogs: async () => {
        if (failing) throw new Error('database unreachable');
        return [{ tenantId: 'a', undelivered: 5, ceiling: 1000 }];
      },
    });
    await metrics.render();
    failing = true;
    const text = await metrics.render();
    expect(sample(text, 'devicechain_governance_governance_command_backlog{tenant="a"}')).toBe(5);
    expect(sample(text, 'devicechain_governance_governance_command_backlog_ceiling{tenant="a"}')).toBe(1000);
    expect(sample(text, 'devicechain_governance_metrics_collect_errors_total{source="commandBacklogs"}')).toBe(1);
  });
});
