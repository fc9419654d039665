// Pulled metrics: at each scrape, ask the sources the service supplied. A failing source leaves its
// metric at its last values and counts on metrics_collect_errors_total, so one slow or broken part never
// takes /metrics down with it. Each pulled gauge calls one of these reads from its prom-client `collect`
// option (metrics.ts), so this file knows gauges, not the metrics object that holds them.
import type { Counter, Gauge } from 'prom-client';
import type { MqttConsumerStats } from '../doors/pipeline/index.ts';
import { OTHER_TENANTS } from './tenantLabels.ts';

export interface CommandBacklogSample {
  /** OTHER_TENANTS for a sample that already sums the tenants a source did not name. */
  tenantId: string;
  undelivered: number;
  ceiling: number;
}

export interface ProjectionLagSample {
  projection: string;
  secondsBehind: number;
}

export interface QuarantineSample {
  projection: string;
  /** Ledger events the projection set aside in its quarantine. */
  events: number;
}

/** One broker door's consumer (MQTT, Sparkplug B), as its stats() read now. */
export interface BrokerDoorSample extends MqttConsumerStats {
  door: string;
}

/** What a broker door's series show: a count since the start (a counter) or a value now (a gauge). */
export type BrokerDoorField = 'connected' | 'received' | 'acknowledged' | 'handlerFaults' | 'inHand' | 'oldestInHandSeconds' | 'connects';

export interface MetricSources {
  /** Tenants with undelivered commands (e.g. from the command backlog read model). */
  commandBacklogs?: () => Promise<Iterable<CommandBacklogSample>>;
  /** Every projection's lag (e.g. ProjectionSet.lag()). */
  projectionLags?: () => Promise<Iterable<ProjectionLagSample>>;
  /** Every projection's quarantined events, 0 for a projection with none (so that the first one is an increase). */
  projectionQuarantine?: () => Promise<Iterable<QuarantineSample>>;
  /** Whether rate counters run on this replica alone because Redis is unreachable. */
  redisCounterFallback?: () => boolean;
  /** Whether unconfirmed tenant names currently share the overflow allowance. */
  nameOverflowInUse?: () => boolean;
  /** Tallies the Governor clamped into an earlier window because its batch for the Recorder was full (GovernorStats.clampedTallies). */
  clampedTallies?: () => number;
  /** HTTP requests that waited for a later turn of the event loop (src/http-server/turnBudget.ts). */
  deferredRequests?: () => number;
  /** The read replica's staleness bound in seconds, null while it is not read from (src/read-replica). */
  readReplicaStaleness?: () => number | null;
  /** Each broker door's consumer (MQTT, Sparkplug B), when the service runs them. */
  brokerDoors?: () => Iterable<BrokerDoorSample>;
}

type SourceName = keyof MetricSources;

export type SourcePulls = ReturnType<typeof createSourcePulls>;

/**
 * The reads behind the pulled gauges. `countError` counts a failed source on metrics_collect_errors_total.
 * Until a source is supplied its gauge keeps whatever it holds.
 */
export function createSourcePulls(named: number, countError: (source: SourceName) => void) {
  const all: MetricSources = {};
  // The registry collects every metric at once; the error counter is registered after the gauges, so
  // by the time it is collected their reads have started, and it waits for them to report this scrape.
  const reads = new Set<Promise<void>>();
  const pull = (source: SourceName, read: () => Promise<() => void>): Promise<void> => {
    // Reads first, then writes: a source that throws has changed nothing.
    const done: Promise<void> = read()
      .then((write) => write())
      .catch(() => countError(source))
      .finally(() => reads.delete(done));
    reads.add(done);
    return done;
  };
  // A gauge with one value per projection, replaced whole at each scrape: a projection no longer reported
  // leaves the gauge.
  const perProjection = <Sample extends { projection: string }>(
    gauge: Gauge<'projection'>,
    name: 'projectionLags' | 'projectionQuarantine',
    source: (() => Promise<Iterable<Sample>>) | undefined,
    valueOf: (sample: Sample) => number,
  ): Promise<void> => {
    if (!source) return Promise.resolve();
    return pull(name, async () => {
      const samples = [...(await source())];
      return () => {
        gauge.reset();
        for (const sample of samples) gauge.set({ projection: sample.projection }, valueOf(sample));
      };
    });
  };
  // The backlog and its ceiling come from one read per scrape: the ceiling gauge waits for the read its
  // sibling (registered just before it) started instead of reading again.
  let backlogRead: Promise<CommandBacklogSample[] | undefined> = Promise.resolve(undefined);

  return {
    /** Supplies sources (any subset; a later call replaces the named ones). */
    use(sources: MetricSources): void {
      Object.assign(all, sources);
    },
    /** For the error counter's collect: every read this scrape started has reported. */
    async settled(): Promise<void> {
      await Promise.all([...reads]);
    },
    commandBacklog(gauge: Gauge<'tenant'>): Promise<void> {
      if (!all.commandBacklogs) return Promise.resolve();
      const source = all.commandBacklogs;
      return pull('commandBacklogs', async () => {
        backlogRead = source().then((samples) => [...samples]);
        const samples = await backlogRead;
        return () => setBacklogs(gauge, named, samples, 'undelivered');
      });
    },
    commandBacklogCeiling(gauge: Gauge<'tenant'>): Promise<void> {
      if (!all.commandBacklogs) return Promise.resolve();
      return pull('commandBacklogs', async () => {
        // A failed read is counted once, by the backlog gauge; the ceilings keep their last values.
        const samples = await backlogRead.catch(() => 'failed' as const);
        return () => {
          if (samples !== 'failed') setBacklogs(gauge, named, samples, 'ceiling');
        };
      });
    },
    projectionLag(gauge: Gauge<'projection'>): Promise<void> {
      return perProjection(gauge, 'projectionLags', all.projectionLags, (sample) => sample.secondsBehind);
    },
    /** A count the source keeps since the process started, as a counter's value. */
    total(counter: Counter<string>, source: 'clampedTallies' | 'deferredRequests'): Promise<void> {
      const read = all[source];
      if (!read) return Promise.resolve();
      return pull(source, async () => {
        const value = read();
        return () => {
          counter.reset();
          counter.inc(value);
        };
      });
    },
    projectionQuarantine(gauge: Gauge<'projection'>): Promise<void> {
      return perProjection(gauge, 'projectionQuarantine', all.projectionQuarantine, (sample) => sample.events);
    },
    /** A value the source may not have: -1 then (an unlabelled gauge is never absent). */
    optional(gauge: Gauge<string>, source: 'readReplicaStaleness'): Promise<void> {
      const read = all[source];
      if (!read) return Promise.resolve();
      return pull(source, async () => {
        const value = read();
        return () => gauge.set(value ?? -1);
      });
    },
    /** One field of every broker door's consumer, a series per door (a counter's value set whole, as `total`). */
    brokerDoor(metric: Gauge<'door'> | Counter<'door'>, field: BrokerDoorField): Promise<void> {
      const read = all.brokerDoors;
      if (!read) return Promise.resolve();
      return pull('brokerDoors', async () => {
        const samples = [...read()];
        return () => {
          metric.reset();
          for (const sample of samples) metric.inc({ door: sample.door }, brokerDoorValue(sample, field));
        };
      });
    },
    flag(gauge: Gauge<string>, source: 'redisCounterFallback' | 'nameOverflowInUse'): Promise<void> {
      const read = all[source];
      if (!read) return Promise.resolve();
      return pull(source, async () => {
        const on = read();
        return () => gauge.set(on ? 1 : 0);
      });
    },
  };
}

// The largest backlogs by name, the rest summed as _other (the ceiling gauge names the same tenants).
function setBacklogs(gauge: Gauge<'tenant'>, named: number, samples: CommandBacklogSample[] | undefined, field: 'undelivered' | 'ceiling'): void {
  gauge.reset();
  if (!samples) return;
  const tenants = samples.filter((sample) => sample.tenantId !== OTHER_TENANTS);
  const ranked = tenants.sort((a, b) => b.undelivered - a.undelivered || (a.tenantId < b.tenantId ? -1 : 1));
  for (const sample of ranked.slice(0, named)) gauge.set({ tenant: sample.tenantId }, sample[field]);
  if (field === 'ceiling') return;
  const folded = [...ranked.slice(named), ...samples.filter((sample) => sample.tenantId === OTHER_TENANTS)];
  if (folded.length > 0) gauge.set({ tenant: OTHER_TENANTS }, folded.reduce((sum, sample) => sum + sample.undelivered, 0));
}

function brokerDoorValue(sample: BrokerDoorSample, field: BrokerDoorField): number {
  if (field === 'connected') return sample.connected ? 1 : 0;
  if (field === 'oldestInHandSeconds') return sample.oldestInHandMs / 1000;
  return sample[field];
}
