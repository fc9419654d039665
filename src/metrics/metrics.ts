// The service's Prometheus metrics, on a registry of their own (nothing leaks into prom-client's global
// one), all named devicechain_<service>_... (docs/governance-model.md, "Observing it").
// Pushed metrics are fed in batches (createMetricsRecorder, the inference meter); pulled ones ask the
// sources the service supplies, at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { OTHER_TENANTS, TenantLabels, type TenantLabelOptions } from './tenantLabels.ts';
import { createSourcePulls, type BrokerDoorField, type MetricSources } from './sources.ts';

export interface MetricsOptions {
  /** GOVERNANCE_SERVICE: the metric prefix is devicechain_<service>_. */
  service: string;
  /** How many tenants are labelled by name; the rest are tenant="_other" (OTHER_TENANTS). */
  namedTenants?: number;
  tenantLabels?: Omit<TenantLabelOptions, 'named'>;
  /** Default process metrics (CPU, memory, event loop); off in tests that count series. */
  processMetrics?: boolean;
}

export const DEFAULT_NAMED_TENANTS = 50;

export function metricPrefix(service: string): string {
  const name = service.trim().toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return `devicechain_${name || 'ingest'}_`;
}

export type Metrics = ReturnType<typeof createMetrics>;

export interface TenantSeriesLabels {
  dimension: string;
  /** '' for a dimension without allowances. */
  allowance: string;
  tenant: string;
}

export interface TenantUnits {
  admitted: number;
  shed: number;
  rejected: number;
  /** Charged, then refused for the sender's credential (ingest's 401): not admitted. */
  unauthenticated?: number;
  /** Messages (requests) refused by a limit: every refusal counts one, per-message or per-unit, with or without units. */
  shedMessages?: number;
  rejectedMessages?: number;
  /** Of the rejected units, refused for the tenant's period quota. */
  quotaRejected?: number;
  hitSeconds: number;
  /** Units a shadow limit (mode SHADOW) would have refused; it refused none. */
  shadowLimited?: number;
  /** Messages (requests) a shadow limit would have refused, per-message charges included. */
  shadowLimitedMessages?: number;
}

/** The `outcome` label of refused_messages_total. */
export const REFUSED_OUTCOMES = ['shed', 'rejected'] as const;
export type RefusedOutcome = (typeof REFUSED_OUTCOMES)[number];

function refusedLabels(labels: TenantSeriesLabels, outcome: RefusedOutcome) {
  return { dimension: labels.dimension, allowance: labels.allowance, tenant: labels.tenant, outcome };
}

export function createMetrics(options: MetricsOptions) {
  const registry = new Registry();
  const prefix = metricPrefix(options.service);
  const registers = [registry];
  const tenants = new TenantLabels({ named: options.namedTenants ?? DEFAULT_NAMED_TENANTS, ...options.tenantLabels });
  const byTenant = ['dimension', 'allowance', 'tenant'] as const;
  // The label sets each named tenant has used, so its series can be removed when it loses its name.
  const tenantSeries = new Map<string, Map<string, TenantSeriesLabels>>();
  const rejectionSeries = new Map<string, Set<string>>();
  const pulls = createSourcePulls(tenants.options.named, (source) => metrics.collectErrors.inc({ source }));
  /** One pulled series per broker door (`door_broker_<suffix>{door}`), read from the consumer's stats at scrape time. */
  const brokerDoorSeries = (kind: typeof Gauge | typeof Counter, suffix: string, field: BrokerDoorField, help: string) =>
    new kind({
      name: `${prefix}door_broker_${suffix}`,
      help: `${help}, by door.`,
      labelNames: ['door'] as const,
      registers,
      collect(this: Gauge<'door'> | Counter<'door'>) {
        return pulls.brokerDoor(this, field);
      },
    });

  const metrics = {
    registry,
    prefix,
    tenants,
    unresolvedAdmissions: new Counter({
      name: `${prefix}governance_unresolved_admissions_total`,
      help: "Units admitted at the platform default because the tenant's ceilings were not known, by dimension and cause (pending, unreachable, unknown-tenant).",
      labelNames: ['dimension', 'cause'] as const,
      registers,
    }),
    admittedUnits: new Counter({
      name: `${prefix}governance_admitted_units_total`,
      help: 'Units admitted within the limit, by dimension, allowance and tenant (the busiest registered tenants by name, the rest as _other).',
      labelNames: byTenant,
      registers,
    }),
    shedUnits: new Counter({
      name: `${prefix}governance_shed_units_total`,
      help: 'Units over the limit that were dropped and counted, by dimension, allowance and tenant.',
      labelNames: byTenant,
      registers,
    }),
    rejectedUnits: new Counter({
      name: `${prefix}governance_rejected_units_total`,
      help: 'Units over the limit that were refused visibly (429 or a retryable rejection), by dimension, allowance and tenant.',
      labelNames: byTenant,
      registers,
    }),
    // Every refusal counts here once, whatever it was charged on: a refusal on the per-message charge (before
    // the body is decoded) carries no units, so the units counters alone would not show it.
    refusedMessages: new Counter({
      name: `${prefix}governance_refused_messages_total`,
      help: 'Messages (requests) refused by a limit, one per refusal whether charged per message or per unit, by dimension, allowance, tenant and outcome (shed: dropped or answered 202; rejected: 429, or 413 for a request larger than the burst).',
      labelNames: ['dimension', 'allowance', 'tenant', 'outcome'] as const,
      registers,
    }),
    unauthenticatedUnits: new Counter({
      name: `${prefix}governance_unauthenticated_units_total`,
      help: 'Units charged (readings are charged before the credential is checked) of requests then refused for their credential (ingest 401); never counted as admitted. By dimension, allowance and tenant (unregistered names as _other).',
      labelNames: byTenant,
      registers,
    }),
    shadowLimitedUnits: new Counter({
      name: `${prefix}governance_shadow_limited_units_total`,
      help: 'Units a shadow limit (a limit set with mode SHADOW, decided beside the enforced one) would have refused; it refused none of them. By dimension, allowance and tenant.',
      labelNames: byTenant,
      registers,
    }),
    shadowLimitedMessages: new Counter({
      name: `${prefix}governance_shadow_limited_messages_total`,
      help: 'Messages (requests) a shadow limit would have refused, per-message charges included; it refused none of them. By dimension, allowance and tenant.',
      labelNames: byTenant,
      registers,
    }),
    quotaRejectedUnits: new Counter({
      name: `${prefix}governance_quota_rejected_units_total`,
      help: "Units rejected for the tenant's period quota (a day's or month's units), not its rate: a part of rejected_units_total. By dimension, allowance and tenant.",
      labelNames: byTenant,
      registers,
    }),
    limitHitSeconds: new Counter({
      name: `${prefix}governance_limit_hit_seconds_total`,
      help: 'Seconds in which a limit was hit, by dimension, allowance and tenant.',
      labelNames: byTenant,
      registers,
    }),
    nameOverflowInUse: new Gauge({
      name: `${prefix}governance_name_overflow_in_use`,
      help: 'Whether unconfirmed HTTP ingest tenant names are sharing the one overflow allowance (1) or not (0).',
      registers,
      collect() {
        return pulls.flag(this, 'nameOverflowInUse');
      },
    }),
    redisCounterFallback: new Gauge({
      name: `${prefix}governance_redis_fallback`,
      help: 'Whether rate counters fell back to this replica alone because Redis is unreachable (1) or not (0).',
      registers,
      collect() {
        return pulls.flag(this, 'redisCounterFallback');
      },
    }),
    readReplicaStaleness: new Gauge({
      name: `${prefix}governance_read_replica_staleness_seconds`,
      help: 'With DATABASE_READ_URL: seconds since the read replica was last seen to have replayed all the primary had committed (the bound each answer read there gives); -1 while the replica is not read from (every read on the primary).',
      registers,
      collect() {
        return pulls.optional(this, 'readReplicaStaleness');
      },
    }),
    clampedTallies: new Counter({
      name: `${prefix}governance_clamped_tallies_total`,
      help: 'Tallies the Governor counted in an earlier window of their key because the batch waiting for the ledger was full (a long ledger outage): counts kept, their seconds clamped. 0 while the ledger keeps up.',
      registers,
      collect() {
        return pulls.total(this, 'clampedTallies');
      },
    }),
    deferredRequests: new Counter({
      name: `${prefix}http_requests_deferred_total`,
      help: 'HTTP requests that waited for a later turn of the event loop because the turn had run its budget of requests (10 ms): a busy listener, answered late rather than holding timers back. Health probes never wait.',
      registers,
      collect() {
        return pulls.total(this, 'deferredRequests');
      },
    }),
    commandBacklog: new Gauge({
      name: `${prefix}governance_command_backlog`,
      help: 'Undelivered commands waiting, by tenant (the largest backlogs by name, the rest summed as _other).',
      labelNames: ['tenant'] as const,
      registers,
      collect() {
        return pulls.commandBacklog(this);
      },
    }),
    commandBacklogCeiling: new Gauge({
      name: `${prefix}governance_command_backlog_ceiling`,
      help: 'The undelivered-command ceiling in force, by tenant (the tenants named in command_backlog).',
      labelNames: ['tenant'] as const,
      registers,
      collect() {
        return pulls.commandBacklogCeiling(this);
      },
    }),
    ledgerAppendSeconds: new Histogram({
      name: `${prefix}ledger_append_duration_seconds`,
      help: 'Time to append one batch of events to the ledger, by outcome (ok or error).',
      labelNames: ['outcome'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    projectionLagSeconds: new Gauge({
      name: `${prefix}projection_lag_seconds`,
      help: 'How long ago the oldest ledger event a projection has not applied yet was recorded; 0 when caught up.',
      labelNames: ['projection'] as const,
      registers,
      collect() {
        return pulls.projectionLag(this);
      },
    }),
    projectionQuarantinedEvents: new Gauge({
      name: `${prefix}projection_quarantined_events`,
      help: 'Ledger events a projection set aside in its quarantine instead of applying (governance projections quarantine lists them).',
      labelNames: ['projection'] as const,
      registers,
      collect() {
        return pulls.projectionQuarantine(this);
      },
    }),
    inferenceInputTokens: new Counter({
      name: `${prefix}ai_inference_input_tokens_total`,
      help: 'Input tokens the AI inference provider reported, instance-wide.',
      registers,
    }),
    inferenceOutputTokens: new Counter({
      name: `${prefix}ai_inference_output_tokens_total`,
      help: 'Output tokens the AI inference provider reported, instance-wide.',
      registers,
    }),
    ledgerVerificationFailures: new Counter({
      name: `${prefix}governance_ledger_verification_failures_total`,
      help: 'Verifications of the stored ledger (its Merkle tree and signed checkpoints, docs/verifiable-ledger.md) that found an event or checkpoint altered.',
      registers,
    }),
    commandRejections: new Counter({
      name: `${prefix}governance_command_rejections_total`,
      help: 'Commands refused at enqueue, by tenant (the busiest named, the rest _other) and reason (CEILING_REACHED, UNKNOWN_TENANT).',
      labelNames: ['tenant', 'reason'] as const,
      registers,
    }),
    /** Counts one refused command; the tenant label is bounded like every per-tenant metric's. */
    addCommandRejection(tenantId: string, reason: string): void {
      tenants.observe(tenantId, 1);
      const tenant = tenants.label(tenantId);
      if (tenant !== OTHER_TENANTS) {
        let reasons = rejectionSeries.get(tenant);
        if (!reasons) rejectionSeries.set(tenant, (reasons = new Set()));
        reasons.add(reason);
      }
      metrics.commandRejections.inc({ tenant, reason });
    },
    doorDroppedMessages: new Counter({
      name: `${prefix}door_dropped_messages_total`,
      help: 'Device messages a door dropped before charging their readings (malformed, too large, a topic or path naming no tenant or device), by door and reason.',
      labelNames: ['door', 'reason'] as const,
      registers,
    }),
    doorSendTimesOutOfWindow: new Counter({
      name: `${prefix}door_send_times_out_of_window_total`,
      help: 'Device messages whose send time (MQTT sent-at, or the newest reading time) lay more than 7 days back or more than 60 s ahead, metered at arrival instead, by door and reason (too-old, future).',
      labelNames: ['door', 'reason'] as const,
      registers,
    }),
    // The broker doors' consumers (MQTT, Sparkplug B), by door: whether each takes messages, how many it took
    // and settled, and how long the message in its hands has waited (a sink tried again and again, or a stall).
    brokerDoorConnected: brokerDoorSeries(Gauge, 'connected', 'connected', "Whether the broker door's consumer is connected to the MQTT broker (1) or reconnecting (0)"),
    brokerDoorConnects: brokerDoorSeries(Counter, 'connects_total', 'connects', "Connections the broker door's consumer made to the MQTT broker since the service started (the first included)"),
    brokerDoorReceived: brokerDoorSeries(Counter, 'messages_received_total', 'received', 'Messages the MQTT broker delivered to the door (redeliveries after a reconnect included)'),
    brokerDoorAcknowledged: brokerDoorSeries(
      Counter,
      'messages_acknowledged_total',
      'acknowledged',
      'Messages the door settled and acknowledged to the MQTT broker (stored, shed, dropped or refused)',
    ),
    brokerDoorHandlerFaults: brokerDoorSeries(Counter, 'handler_faults_total', 'handlerFaults', 'Messages whose handling failed unexpectedly (logged, acknowledged and dropped)'),
    brokerDoorInHand: brokerDoorSeries(
      Gauge,
      'messages_in_hand',
      'inHand',
      'Messages the door holds unacknowledged while it settles them (the broker keeps the rest queued for the session)',
    ),
    brokerDoorOldestInHand: brokerDoorSeries(
      Gauge,
      'oldest_in_hand_seconds',
      'oldestInHandSeconds',
      'How long the oldest message the door holds has waited to be settled (0 with none): the reading sink tried again and again',
    ),
    collectErrors: new Counter({
      name: `${prefix}metrics_collect_errors_total`,
      help: 'Scrapes at which a metric source failed; its metric kept its last values.',
      labelNames: ['source'] as const,
      registers,
      collect() {
        return pulls.settled();
      },
    }),
    /** Counts a batch's units on the per-tenant counters (one inc per label set; see metricsRecorder). */
    addTenantUnits(labels: TenantSeriesLabels, units: TenantUnits): void {
      if (labels.tenant !== OTHER_TENANTS) {
        let series = tenantSeries.get(labels.tenant);
        if (!series) tenantSeries.set(labels.tenant, (series = new Map()));
        series.set(`${labels.dimension}\u0000${labels.allowance}`, labels);
      }
      if (units.admitted > 0) metrics.admittedUnits.inc(labels, units.admitted);
      if (units.shed > 0) metrics.shedUnits.inc(labels, units.shed);
      if (units.rejected > 0) metrics.rejectedUnits.inc(labels, units.rejected);
      if ((units.unauthenticated ?? 0) > 0) metrics.unauthenticatedUnits.inc(labels, units.unauthenticated);
      if ((units.quotaRejected ?? 0) > 0) metrics.quotaRejectedUnits.inc(labels, units.quotaRejected);
      if ((units.shedMessages ?? 0) > 0) metrics.refusedMessages.inc(refusedLabels(labels, 'shed'), units.shedMessages);
      if ((units.rejectedMessages ?? 0) > 0) metrics.refusedMessages.inc(refusedLabels(labels, 'rejected'), units.rejectedMessages);
      if (units.hitSeconds > 0) metrics.limitHitSeconds.inc(labels, units.hitSeconds);
      if ((units.shadowLimited ?? 0) > 0) metrics.shadowLimitedUnits.inc(labels, units.shadowLimited);
      if ((units.shadowLimitedMessages ?? 0) > 0) metrics.shadowLimitedMessages.inc(labels, units.shadowLimitedMessages);
    },
    /** Supplies the pulled metrics' sources (any subset; a later call replaces the named ones). */
    useSources(sources: MetricSources): void {
      pulls.use(sources);
    },
    async render(): Promise<string> {
      return registry.metrics();
    },
  };

  // A demoted tenant's series are removed: its units count under tenant="_other" (OTHER_TENANTS) from now
  // on, and the set of series stays at most (named + 1) per dimension and allowance.
  tenants.onDemoted = (demoted) => {
    for (const tenant of demoted) {
      for (const labels of tenantSeries.get(tenant)?.values() ?? []) {
        for (const counter of [metrics.admittedUnits, metrics.shedUnits, metrics.rejectedUnits, metrics.unauthenticatedUnits, metrics.quotaRejectedUnits, metrics.limitHitSeconds, metrics.shadowLimitedUnits, metrics.shadowLimitedMessages]) {
          counter.remove(labels);
        }
        for (const outcome of REFUSED_OUTCOMES) metrics.refusedMessages.remove(refusedLabels(labels, outcome));
      }
      tenantSeries.delete(tenant);
      for (const reason of rejectionSeries.get(tenant) ?? []) metrics.commandRejections.remove({ tenant, reason });
      rejectionSeries.delete(tenant);
    }
  };

  if (options.processMetrics !== false) {
    collectDefaultMetrics({ register: registry, prefix });
    // prom-client names these gauges *_total, which `promtool check metrics` rejects (a _total suffix
    // promises a counter). The same numbers remain, broken down by type, in nodejs_active_handles,
    // nodejs_active_requests and nodejs_active_resources.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
      registry.removeSingleMetric(`${prefix}${name}`);
    }
  }
  return metrics;
}
