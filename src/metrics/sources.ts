// Pulled metrics: at each scrape, ask the sources the service supplied. A failing source leaves its
// metric at its last values and counts on metrics_collect_errors_total, so one slow or broken part never
// takes /metrics down with it.
import type { Gauge } from 'prom-client';
import { OTHER_TENANTS } from './tenantLabels.ts';
import type { Metrics } from './metrics.ts';

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

export interface MetricSources {
  /** Tenants with undelivered commands (e.g. from the command backlog read model). */
  commandBacklogs?: () => Promise<Iterable<CommandBacklogSample>>;
  /** Every projection's lag (e.g. ProjectionSet.lag()). */
  projectionLags?: () => Promise<Iterable<ProjectionLagSample>>;
  /** Whether rate counters run on this replica alone because Redis is unreachable. */
  redisCounterFallback?: () => boolean;
  /** Whether unconfirmed tenant names currently share the overflow allowance. */
  nameOverflowInUse?: () => boolean;
}

type SourceName = keyof MetricSources;

const installed = new WeakMap<Metrics, MetricSources>();

export function watchSources(metrics: Metrics, sources: MetricSources): void {
  const current = installed.get(metrics);
  if (current) {
    Object.assign(current, sources);
    return;
  }
  const all: MetricSources = { ...sources };
  installed.set(metrics, all);
  const named = metrics.tenants.options.named;
  // The registry collects every metric at once; the error counter is registered after the gauges, so
  // by the time it is collected their reads have started, and it waits for them to report this scrape.
  const reads = new Set<Promise<void>>();
  Object.assign(metrics.collectErrors, {
    async collect() {
      await Promise.all([...reads]);
    },
  });
  const pull = (gauge: Gauge<string>, source: SourceName, read: () => Promise<() => void>) => {
    Object.assign(gauge, {
      collect() {
        // Reads first, then writes: a source that throws has changed nothing.
        const done: Promise<void> = read()
          .then((write) => write())
          .catch(() => {
            metrics.collectErrors.inc({ source });
          })
          .finally(() => reads.delete(done));
        reads.add(done);
        return done;
      },
    });
  };

  // The backlog and its ceiling come from one read per scrape: the ceiling gauge waits for the read its
  // sibling (registered just before it) started instead of reading again.
  let backlogRead: Promise<CommandBacklogSample[] | undefined> = Promise.resolve(undefined);
  pull(metrics.commandBacklog, 'commandBacklogs', async () => {
    backlogRead = all.commandBacklogs ? all.commandBacklogs().then((samples) => [...samples]) : Promise.resolve(undefined);
    const samples = await backlogRead;
    return () => setBacklogs(metrics, named, samples, 'undelivered');
  });
  pull(metrics.commandBacklogCeiling, 'commandBacklogs', async () => {
    // A failed read is counted once, by the backlog gauge; the ceilings keep their last values.
    const samples = await backlogRead.catch(() => 'failed' as const);
    return () => {
      if (samples !== 'failed') setBacklogs(metrics, named, samples, 'ceiling');
    };
  });

  pull(metrics.projectionLagSeconds, 'projectionLags', async () => {
    const samples = all.projectionLags ? [...(await all.projectionLags())] : undefined;
    return () => {
      if (!samples) return;
      metrics.projectionLagSeconds.reset();
      for (const sample of samples) metrics.projectionLagSeconds.set({ projection: sample.projection }, sample.secondsBehind);
    };
  });

  pull(metrics.redisCounterFallback, 'redisCounterFallback', async () => {
    const fallback = all.redisCounterFallback?.();
    return () => {
      if (fallback !== undefined) metrics.redisCounterFallback.set(fallback ? 1 : 0);
    };
  });

  pull(metrics.nameOverflowInUse, 'nameOverflowInUse', async () => {
    const inUse = all.nameOverflowInUse?.();
    return () => {
      if (inUse !== undefined) metrics.nameOverflowInUse.set(inUse ? 1 : 0);
    };
  });
}

// The largest backlogs by name, the rest summed as "other" (the ceiling gauge names the same tenants).
function setBacklogs(metrics: Metrics, named: number, samples: CommandBacklogSample[] | undefined, field: 'undelivered' | 'ceiling'): void {
  const gauge = field === 'undelivered' ? metrics.commandBacklog : metrics.commandBacklogCeiling;
  gauge.reset();
  if (!samples) return;
  const tenants = samples.filter((sample) => sample.tenantId !== OTHER_TENANTS);
  const ranked = tenants.sort((a, b) => b.undelivered - a.undelivered || (a.tenantId < b.tenantId ? -1 : 1));
  for (const sample of ranked.slice(0, named)) gauge.set({ tenant: sample.tenantId }, sample[field]);
  if (field === 'ceiling') return;
  const folded = [...ranked.slice(named), ...samples.filter((sample) => sample.tenantId === OTHER_TENANTS)];
  if (folded.length > 0) gauge.set({ tenant: OTHER_TENANTS }, folded.reduce((sum, sample) => sum + sample.undelivered, 0));
}
