// The composition root: opens storage, builds every part, and hands the server its routes. Each part lives
// in its own folder; this file only wires them.
import type { Settings } from './config.ts';
import type { Db } from './db/db.ts';
import { openDb } from './db/open.ts';
import { storageUnavailableIn } from './db/storageUnavailable.ts';
import { migrate } from './db/migrate.ts';
import { createLogger, type Logger } from './logger.ts';
import type { EventStore } from './ledger/eventStore.ts';
import { openEventStore } from './ledger/openEventStore.ts';
import { startProjections, type ProjectionSet } from './ledger/projectionSet.ts';
import { projectionReadiness } from './ledger/projectionReadiness.ts';
import { createRedisSharedBudget, fanOutRecorder, Governor } from './governance/index.ts';
import { createLedgerRecorder } from './ledger/ledgerRecorder.ts';
import { createReadModelLimitSource } from './control-plane/limitSource.ts';
import { feedConfirmedTenants } from './control-plane/feedConfirmedTenants.ts';
import { createControlPlane, type ControlPlane } from './control-plane/controlPlane.ts';
import { createCommandBacklog } from './command-backlog/createCommandBacklog.ts';
import { controlPlaneCeilings } from './command-backlog/controlPlaneCeilings.ts';
import { startCommandExpiry } from './command-backlog/startCommandExpiry.ts';
import type { CommandBacklog } from './command-backlog/types.ts';
import { allProjections } from '../projections/index.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { createMetricsRecorder } from './metrics/metricsRecorder.ts';
import { countCommandRejections } from './metrics/countCommandRejections.ts';
import { instrumentEventStore } from './metrics/instrumentEventStore.ts';
import { metricsRoute } from './metrics/metricsRoute.ts';
import { readMetricsSettings } from './metrics/metricsSettings.ts';
import { commandBacklogSource } from './metrics/commandBacklogSource.ts';
import { createInferenceSpendMeter, type InferenceSpendMeter } from './metrics/inferenceSpendMeter.ts';
import { startTrendPruning } from './metrics/trends/pruneTrends.ts';
import { startLedgerRetention } from './ledger/retention/startLedgerRetention.ts';
import type { ReadinessCheck } from './http-server/health.ts';
import { startIngest } from './doors/http/startIngest.ts';
import { startDoorParts } from './doors/pipeline/startDoorParts.ts';
import { startMqttDoor } from './doors/mqtt/startMqttDoor.ts';
import { startSparkplugDoor } from './doors/sparkplug/startSparkplugDoor.ts';
import { startLwm2mDoor } from './doors/lwm2m/startLwm2mDoor.ts';
import type { Route } from './http-server/route.ts';
import { createApiPubSub } from './api/pubsub.ts';
import { withApiPublishers } from './api/publishers.ts';
import { createGraphQLRoute, tokenVerifierFor } from './api/createGraphQLRoute.ts';
import { createAdmissionRoutes } from './doors/admissions/admissionRoutes.ts';
import { createLeaseRoutes } from './doors/leases/leaseRoutes.ts';
import { createServiceCallers } from './doors/admissions/serviceCallers.ts';
import { openapiRoute } from './doors/openapi/openapiRoute.ts';
import { readDescriptorMapping } from './doors/envoy-rls/descriptorMapping.ts';
import { createRateLimitDecider, type RateLimitDecider } from './doors/envoy-rls/rateLimitService.ts';
import { consoleRoute } from './console/consoleRoute.ts';


export interface Service {
  settings: Settings;
  logger: Logger;
  db: Db;
  store: EventStore;
  governor: Governor;
  controlPlane: ControlPlane;
  commands: CommandBacklog;
  projections: ProjectionSet;
  metrics: Metrics;
  /** AI inference enforcement points report provider tokens here (instance-wide counters, per tenant in the ledger). */
  inferenceSpend: InferenceSpendMeter;
  readiness: ReadinessCheck[];
  routes: Route[];
  /** Envoy's ShouldRateLimit on the same Governor; `governance serve` listens for it on GOVERNANCE_GRPC_PORT. */
  rateLimits: RateLimitDecider;
  close(): Promise<void>;
}

export async function startService(settings: Settings, logger: Logger = createLogger(settings.logLevel)): Promise<Service> {
  // A lost connection is survived (the work on it fails with StorageUnavailable, answered 503 / SERVICE_UNAVAILABLE)
  // and logged here.
  const db = await openDb(settings, {
    onConnectionError: (error) => logger.warn({ err: error }, 'database connection lost or refused; reconnecting on demand'),
  });
  const applied = await migrate(db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const metricsSettings = readMetricsSettings();
  // Read before anything is opened: a bad mapping stops the start, naming the variable.
  const rlsMapping = readDescriptorMapping();
  const metrics = createMetrics({ service: settings.service, namedTenants: metricsSettings.namedTenants });
  const store = instrumentEventStore(openEventStore(db, settings.eventStoreUrl), metrics);

  // REDIS_URL: ceilings hold across replicas. Start-up waits briefly for Redis but never blocks on it: a Redis
  // that is down means local metering at half the limit until it answers.
  const sharedBudget = settings.redisUrl
    ? createRedisSharedBudget({
        url: settings.redisUrl,
        keyPrefix: settings.redisKeyPrefix,
        onError: (error) => logger.warn({ err: error }, 'redis error'),
      })
    : undefined;
  if (sharedBudget && !(await sharedBudget.ready())) logger.warn('Redis does not answer: metering each replica at half the limit until it does');
  // One Recorder for every decision: the Governor's own tallies and the leasing clients' summaries.
  const recorder = fanOutRecorder(createLedgerRecorder(store), createMetricsRecorder(metrics));
  const governor = new Governor({
    limitSource: createReadModelLimitSource(db),
    sharedBudget,
    recorder,
    onError: (error: unknown) => logger.warn({ err: error }, 'governor background work failed'),
  });
  await feedConfirmedTenants(db, governor);
  // Only registered tenants get a /metrics label of their own: names invented at the ingest door go to "_other".
  metrics.tenants.isConfirmed = (tenantId) => governor.isConfirmed(tenantId);
  const controlPlane = createControlPlane({ db, store, governor });
  // With EVENTSTORE_URL the ledger shares no transaction with the database: the backlog guards itself by stream revision.
  const commands = countCommandRejections(
    createCommandBacklog({
      db,
      store,
      ceilings: controlPlaneCeilings,
      ledger: settings.eventStoreUrl ? 'stream' : 'database',
      commandTtlMs: settings.commandTtlSeconds * 1000,
    }),
    metrics,
  );
  // GraphQL subscriptions hear of what the projections commit.
  const pubsub = createApiPubSub();
  const projections = await startProjections(db, store, withApiPublishers(allProjections({ governor }), pubsub), {
    onError: (error, projection) => logger.error({ err: error, projection: projection.name }, 'projection failed'),
  });

  // Closed in reverse order of this list: projections stop before the governor's last flush lands in the store.
  const closers: Array<() => Promise<void>> = [() => governor.close(), () => projections.close()];
  if (sharedBudget) closers.unshift(() => sharedBudget.close());
  const inferenceSpend = createInferenceSpendMeter(store, metrics, {
    onError: (error) => logger.warn({ err: error }, 'inference spend append failed; retried at the next flush'),
  });
  closers.push(() => inferenceSpend.close());
  const pruning = startTrendPruning(db, metricsSettings.retention, { onError: (error) => logger.warn({ err: error }, 'trend pruning failed') });
  closers.push(() => pruning.close());
  // The PostgreSQL ledger's admission summaries: partitions made ahead, days past the retention archived
  // (src/ledger/retention/README.md). EventStoreDB keeps its own streams.
  if (!settings.eventStoreUrl) {
    const retention = startLedgerRetention(db, {
      retentionDays: settings.ledgerRetentionDays,
      dir: settings.ledgerArchiveDir,
      command: settings.ledgerArchiveCommand,
      projections: allProjections(),
      onError: (error) => logger.warn({ err: error }, 'ledger retention pass failed; tried again in an hour'),
      onArchived: ({ day, file, manifest }) => logger.info({ day, file, events: manifest.events, sha256: manifest.sha256 }, 'admission summaries archived'),
      onPass: ({ archive }) => {
        for (const { day, reason } of archive?.skipped ?? []) logger.warn({ day, reason }, 'admission summaries not archived yet');
      },
    });
    closers.push(() => retention.close());
  }
  metrics.useSources({
    commandBacklogs: commandBacklogSource(db, metricsSettings.namedTenants),
    projectionLags: () => projections.lag(),
    redisCounterFallback: () => governor.stats().sharedFallbackActive,
    nameOverflowInUse: () => governor.overflowInUse,
  });
  closers.push(startCommandExpiry(commands, { onError: (error) => logger.warn({ err: error }, 'command expiry failed') }));
  const readiness: ReadinessCheck[] = [
    async () => {
      try {
        await db.query('SELECT 1');
        return null;
      } catch (error) {
        return storageUnavailableIn(error) ? 'the database is unavailable' : `the database check failed: ${String(error)}`;
      }
    },
    projectionReadiness(() => projections.lag(), settings.readyMaxLagSeconds),
  ];
  // Closed before the governor (closers run in reverse): no request reaches a closed sink.
  const door = await startDoorParts({ settings, db, governor, logger });
  closers.push(() => door.close());
  const ingest = startIngest({ settings, logger, door });
  // The device doors take the same parts; each is closed before them (closers run in reverse).
  if (settings.mqttUrl) {
    const doorSettings = { ...settings, mqttUrl: settings.mqttUrl };
    const mqttDoor = await startMqttDoor({
      settings: doorSettings,
      parts: door,
      logger,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'mqtt', reason }),
    });
    closers.push(() => mqttDoor.close());
    const sparkplugDoor = await startSparkplugDoor({
      settings: doorSettings,
      parts: door,
      logger,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'sparkplug', reason }),
    });
    closers.push(() => sparkplugDoor.close());
  }
  if (settings.lwm2mEnabled) {
    const lwm2mDoor = await startLwm2mDoor({
      port: settings.lwm2mPort,
      host: settings.host,
      parts: door,
      logger,
      maxPayloadBytes: settings.ingestMaxBodyBytes,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'lwm2m', reason }),
    });
    closers.push(() => lwm2mDoor.close());
  }
  const routes: Route[] = [metricsRoute(metrics, { token: metricsSettings.token }), consoleRoute(), ...ingest.routes];
  routes.push(await createGraphQLRoute({ settings, logger, db, store, controlPlane, commands }, pubsub));
  // Enforcement points in other processes: the same Governor, so their decisions reach the same Recorder.
  const callers = createServiceCallers(await tokenVerifierFor(settings, logger));
  routes.push(...createAdmissionRoutes({ governor, inferenceSpend, callers }), openapiRoute());
  // Leasing clients draw slices from a Governor of their own on the same limits; it records nothing, since
  // the clients report what they admitted and refused with the slices.
  const leaseGovernor = new Governor({
    limitSource: createReadModelLimitSource(db),
    onError: (error: unknown) => logger.warn({ err: error }, 'lease governor background work failed'),
  });
  closers.push(() => leaseGovernor.close());
  const authorize = async (authorization: string | undefined) => {
    const checked = await callers.check(authorization);
    return checked.status;
  };
  routes.push(...createLeaseRoutes({ leaseGovernor, recorder, authorize, logger }));

  return {
    settings,
    logger,
    db,
    store,
    governor,
    controlPlane,
    commands,
    projections,
    metrics,
    inferenceSpend,
    readiness,
    routes,
    rateLimits: createRateLimitDecider(governor, rlsMapping),
    async close() {
      for (const close of closers.reverse()) await close().catch((error: unknown) => logger.warn({ err: error }, 'close failed'));
      await store.close();
      await db.close();
    },
  };
}
