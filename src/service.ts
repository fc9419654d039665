// The composition root: opens storage, builds every part, and hands the server its routes. Each part lives
// in its own folder; this file only wires them.
import type { Settings } from './config.ts';
import { createLogger, type Logger } from './logger.ts';
import { openStorage, storageUnavailableIn, type Db } from './db/index.ts';
import {
  createLedgerRecorder,
  openEventStore,
  projectionQuarantineCounts,
  projectionReadiness,
  startLedgerRetention,
  startVerifiableLedger,
  MERKLE_TREE_READER,
  startProjections,
  type EventStore,
  type ProjectionSet,
} from './ledger/index.ts';
import { fanOutRecorder, Governor, loadRedisSharedBudget } from './governance/index.ts';
import {
  createControlPlane,
  createReadModelLimitSource,
  followScheduledLimitChanges,
  loadLimitsAndFollowChanges,
  type ControlPlane,
} from './control-plane/index.ts';
import { controlPlaneCeilings, createCommandBacklog, startCommandExpiry, type CommandBacklog } from './command-backlog/index.ts';
import { allProjections, projectionWorkers } from '../projections/index.ts';
import { createDatabaseQuotaBudget, createQuotaNoticeWriter } from './quotas/index.ts';
import { startWebhookDelivery } from './webhooks/index.ts';
import { demandRetentionDays, startDemandPruning } from './limit-preview/index.ts';
import {
  commandBacklogSource,
  countCommandRejections,
  createInferenceSpendMeter,
  createMetrics,
  createMetricsRecorder,
  instrumentEventStore,
  metricsRoute,
  readMetricsSettings,
  startTrendPruning,
  type InferenceSpendMeter,
  type Metrics,
} from './metrics/index.ts';
import { TurnBudget } from './http-server/index.ts';
import type { ReadinessCheck, Route } from './http-server/index.ts';
import {
  createAdmissionRoutes,
  createLeaseRoutes,
  createRateLimitDecider,
  createServiceCallers,
  openapiRoute,
  readDescriptorMapping,
  startDoorParts,
  startIngest,
  loadLwm2mDoor,
  loadMqttDoor,
  loadSparkplugDoor,
  type RateLimitDecider,
} from './doors/index.ts';
import { createApiPubSub, createGraphQLRoute, tokenVerifierFor, withApiPublishers } from './api/index.ts';
import { openReadRouting } from './read-replica/index.ts';
import { consoleRoute, faviconRoute } from './console/index.ts';

/** The readiness check's query on PostgreSQL answers within this, or the database counts as not answering. */
const DATABASE_CHECK_TIMEOUT_MS = 1_500;

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
  /** The budget of a turn of the event loop its HTTP listener's requests share (reported on /metrics). */
  turns: TurnBudget;
  /** Envoy's ShouldRateLimit on the same Governor; `governance serve` listens for it on GOVERNANCE_GRPC_PORT. */
  rateLimits: RateLimitDecider;
  /**
   * Closes every part, flushing the ledger. `clean`: a stop asked for (SIGTERM, SIGINT), not a crash: the broker
   * doors then end their sessions (MQTT_END_SESSION_ON_STOP); otherwise the sessions stay for the next start.
   */
  close(options?: { clean?: boolean }): Promise<void>;
}

/**
 * `storage`: the database being opened (openStorage), when the caller started that before loading this module,
 * so that the two overlap; otherwise it is opened here.
 */
export async function startService(
  settings: Settings,
  logger: Logger = createLogger(settings.logLevel),
  storage: Promise<Db> = openStorage(settings, logger),
): Promise<Service> {
  const db = await storage;
  const metricsSettings = readMetricsSettings();
  // Read before anything is opened: a bad mapping stops the start, naming the variable.
  const rlsMapping = readDescriptorMapping();
  const metrics = createMetrics({ service: settings.service, namedTenants: metricsSettings.namedTenants });
  const store = instrumentEventStore(await openEventStore(db, settings.eventStoreUrl), metrics);

  // REDIS_URL: ceilings hold across replicas. Start-up waits briefly for Redis but never blocks on it: a Redis
  // that is down means local metering at half the limit until it answers.
  const sharedBudget = settings.redisUrl
    ? (await loadRedisSharedBudget()).createRedisSharedBudget({
        url: settings.redisUrl,
        cluster: settings.redisCluster,
        keyPrefix: settings.redisKeyPrefix,
        onError: (error) => logger.warn({ err: error }, 'redis error'),
      })
    : undefined;
  if (sharedBudget && !(await sharedBudget.ready())) logger.warn('Redis does not answer: metering each replica at half the limit until it does');
  // One Recorder for every decision: the Governor's own tallies and the leasing clients' summaries.
  // Summaries refer to the keys stored earlier in the hour where readers can look the source up by id: the
  // ledger in the read models' database (src/ledger/catalog/summaryRefs.ts).
  const referenceKeys = !settings.eventStoreUrl;
  const recorder = fanOutRecorder(
    createLedgerRecorder(store, { referenceKeys }),
    createMetricsRecorder(metrics),
  );
  // Quota thresholds crossed, recorded in the ledger (once each, whichever replicas notice them).
  const quotaNotices = createQuotaNoticeWriter(store, { onError: (error) => logger.warn({ err: error }, 'quota notices not recorded yet') });
  const governor = new Governor({
    limitSource: createReadModelLimitSource(db),
    sharedBudget,
    // Without Redis, period quotas are still counted across replicas: in the database (gl_quota_usage), in
    // slices reserved off the hot path as Redis' are (src/quotas/databaseQuotaBudget.ts).
    quotaBudget: sharedBudget ? undefined : createDatabaseQuotaBudget(db, { onError: (error) => logger.warn({ err: error }, 'quota usage sweep failed') }),
    recorder,
    onQuotaThreshold: (crossing) => quotaNotices.notice(crossing),
    onError: (error: unknown) => logger.warn({ err: error }, 'governor background work failed'),
  });
  // Leasing clients draw slices from a Governor of their own on the same limits; it records nothing, since
  // the clients report what they admitted and refused with the slices.
  const leaseGovernor = new Governor({
    limitSource: createReadModelLimitSource(db),
    onError: (error: unknown) => logger.warn({ err: error }, 'lease governor background work failed'),
  });
  // Every registered tenant's ceilings, read before the service is ready (the HTTP server listens only after
  // startService), and every later change, whichever process commits it (src/control-plane/limitChanges.ts).
  const limitFollowing = await loadLimitsAndFollowChanges(db, [governor, leaseGovernor], {
    onError: (error) => logger.warn({ err: error }, 'limit changes are not followed (LISTEN failed): each tenant is read again after the cache TTL'),
  });
  logger.info(limitFollowing.preload, 'tenant limits loaded');
  // Only registered tenants get a /metrics label of their own: names invented at the ingest door go to "_other".
  metrics.tenants.isConfirmed = (tenantId) => governor.isConfirmed(tenantId);
  const controlPlane = createControlPlane({ db, store, governor });
  // Scheduled limit changes take effect at their instant by this process's own timer (src/control-plane/change-requests).
  const scheduleFollowing = await followScheduledLimitChanges(db, [governor, leaseGovernor], controlPlane, {
    onError: (error) => logger.warn({ err: error }, 'a scheduled limit change could not be armed or applied; it applies at the next arming'),
    onSwitch: (changeId, lateMs) => logger.info({ changeId, lateMs }, 'scheduled limit change due: its tenants are read again at its instant'),
  });
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
  // On PostgreSQL the heaviest projections run in workers of their own (GOVERNANCE_PROJECTION_WORKERS: a process
  // or a thread each, on its own connections to the same schema);
  // PGlite is one connection in this process, and an EventStoreDB ledger is read here.
  const workers =
    settings.projectionWorkers !== 'off' && settings.databaseUrl && !settings.eventStoreUrl
      ? projectionWorkers(
          { connectionString: settings.databaseUrl, schema: settings.dbSchema },
          {
            isolation: settings.projectionWorkers,
            maxHeapMb: settings.projectionWorkerMaxHeapMb,
            maxBlockedMs: settings.projectionMaxBlockedSeconds * 1_000,
          },
        )
      : undefined;
  // Start-up waits for no projection to catch up: the runners start from their checkpoints and apply in the
  // background; /readyz reports their lag, and an event none can apply is quarantined (src/ledger/README.md).
  const projections = await startProjections(db, store, withApiPublishers(allProjections({ governor }), pubsub), {
    workers,
    onError: (error, projection) => logger.error({ err: error, projection: projection.name }, 'projection failed'),
    onQuarantined: (event) =>
      logger.warn(
        { projection: event.projection, eventId: event.id, eventType: event.type, stream: event.stream, reason: event.reason },
        'projection quarantined an event it cannot apply; see governance projections quarantine',
      ),
  });

  // Closed in reverse order of this list: projections stop before the governor's last flush lands in the store.
  // Set by close(): whether this is a clean stop (the broker doors' closers read it).
  let cleanStop = false;
  // Notices go after the governor's last admissions (closers run in reverse); webhook deliveries stop first.
  const webhookDelivery = startWebhookDelivery({ db, onError: (error) => logger.warn({ err: error }, 'webhook delivery failed') });
  const closers: Array<() => Promise<void>> = [
    () => quotaNotices.close(),
    () => governor.close(),
    () => projections.close(),
    () => limitFollowing.close(),
    () => scheduleFollowing.close(),
    () => webhookDelivery.close(),
  ];
  if (sharedBudget) closers.unshift(() => sharedBudget.close());
  const inferenceSpend = createInferenceSpendMeter(store, metrics, {
    onError: (error) => logger.warn({ err: error }, 'inference spend append failed; retried at the next flush'),
  });
  closers.push(() => inferenceSpend.close());
  const pruning = startTrendPruning(db, metricsSettings.retention, { onError: (error) => logger.warn({ err: error }, 'trend pruning failed') });
  closers.push(() => pruning.close());
  // The limit preview's per-second demand: kept as long as the minute trends, and at least as far back as a
  // preview reaches (src/limit-preview/README.md).
  const demandPruning = startDemandPruning(db, demandRetentionDays(metricsSettings.retention.MINUTE), {
    onError: (error) => logger.warn({ err: error }, 'demand pruning failed'),
  });
  closers.push(() => demandPruning.close());
  // The PostgreSQL ledger's admission summaries: partitions made ahead, days past the retention archived
  // (src/ledger/retention/README.md). EventStoreDB keeps its own streams.
  if (!settings.eventStoreUrl) {
    const retention = startLedgerRetention(db, {
      retentionDays: settings.ledgerRetentionDays,
      dir: settings.ledgerArchiveDir,
      command: settings.ledgerArchiveCommand,
      projections: [...allProjections(), MERKLE_TREE_READER],
      onError: (error) => logger.warn({ err: error }, 'ledger retention pass failed; tried again in an hour'),
      onArchived: ({ day, file, manifest }) => logger.info({ day, file, events: manifest.events, sha256: manifest.sha256 }, 'admission summaries archived'),
      onPass: ({ archive }) => {
        for (const { day, reason } of archive?.skipped ?? []) logger.warn({ day, reason }, 'admission summaries not archived yet');
      },
    });
    closers.push(() => retention.close());
  }

  // Every event a leaf of a Merkle tree, signed checkpoints handed out, the stored ledger verified now and then
  // (docs/verifiable-ledger.md). A failed verify is logged and counted; the service keeps serving. On
  // EventStoreDB the tree follows $all through the port and is kept here, beside the read models.
  const verifiable = await startVerifiableLedger(db, {
    ledger: settings.eventStoreUrl ? store : undefined,
    dataDir: settings.dataDir,
    ...settings.ledgerVerifiable,
    onError: (error, step) => logger.warn({ err: error, step }, 'verifiable ledger step failed; tried again at the next pass'),
    onSigned: ({ treeSize }) => logger.debug({ treeSize }, 'ledger checkpoint signed'),
    onDelivered: ({ treeSize }, file) => logger.debug({ treeSize, file }, 'ledger checkpoint handed to GOVERNANCE_CHECKPOINT_COMMAND'),
    onVerificationFailed: ({ reason, leaf, eventId }) => {
      metrics.ledgerVerificationFailures.inc();
      logger.error({ reason, leaf, eventId }, 'ledger verification failed: the stored ledger was altered');
    },
    onVerified: ({ summary }) => logger.info({ summary }, 'ledger verified'),
  });
  closers.push(() => verifiable.close());
  const turns = new TurnBudget();
  metrics.useSources({
    commandBacklogs: commandBacklogSource(db, metricsSettings.namedTenants),
    projectionLags: () => projections.lag(),
    projectionQuarantine: () => projectionQuarantineCounts(db, projections),
    redisCounterFallback: () => governor.stats().sharedFallbackActive,
    nameOverflowInUse: () => governor.overflowInUse,
    clampedTallies: () => governor.stats().clampedTallies,
    deferredRequests: () => turns.deferred,
  });
  closers.push(startCommandExpiry(commands, { onError: (error) => logger.warn({ err: error }, 'command expiry failed') }));
  const readiness: ReadinessCheck[] = [
    async () => {
      try {
        if (db.kind !== 'postgres') {
          await db.query('SELECT 1');
          return null;
        }
        // A standby answers queries but takes no write: behind a proxy that moved to it before its promotion.
        const answer = db.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
        const late = new Promise<'late'>((resolve) => setTimeout(resolve, DATABASE_CHECK_TIMEOUT_MS, 'late').unref());
        const result = await Promise.race([answer, late]);
        if (result === 'late') {
          answer.catch(() => {});
          return 'the database does not answer (a network cut?)';
        }
        return result.rows[0]?.recovery ? 'the database is read-only (a standby in recovery: a failover is under way)' : null;
      } catch (error) {
        return storageUnavailableIn(error) ? 'the database is unavailable' : `the database check failed: ${String(error)}`;
      }
    },
    projectionReadiness(() => projections.lag(), settings.readyMaxLagSeconds),
  ];
  // Closed before the governor (closers run in reverse): no request reaches a closed sink.
  const door = await startDoorParts({ settings, db, governor, logger });
  closers.push(() => door.close());
  // A sink that is down (NATS reconnecting) makes every ingest door answer "retry": /readyz says so, naming it.
  readiness.push(() => Promise.resolve(door.sink.unavailable?.() ?? null));
  const ingest = startIngest({ settings, logger, door });
  // The device doors take the same parts; each is closed before them (closers run in reverse). Each is loaded
  // only when it is configured: its broker and codec libraries would otherwise cost every start.
  if (settings.mqttUrl) {
    const [{ startMqttDoor }, { startSparkplugDoor }] = await Promise.all([loadMqttDoor(), loadSparkplugDoor()]);
    const doorSettings = { ...settings, mqttUrl: settings.mqttUrl };
    const mqttDoor = await startMqttDoor({
      settings: doorSettings,
      parts: door,
      logger,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'mqtt', reason }),
      onSendTimeOutOfWindow: (reason) => metrics.doorSendTimesOutOfWindow.inc({ door: 'mqtt', reason }),
    });
    closers.push(() => mqttDoor.close({ endSession: cleanStop && settings.mqttEndSessionOnStop }));
    const sparkplugDoor = await startSparkplugDoor({
      settings: doorSettings,
      parts: door,
      logger,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'sparkplug', reason }),
    });
    closers.push(() => sparkplugDoor.close({ endSession: cleanStop && settings.mqttEndSessionOnStop }));
    metrics.useSources({
      brokerDoors: () => [
        { door: 'mqtt', ...mqttDoor.stats() },
        { door: 'sparkplug', ...sparkplugDoor.stats() },
      ],
    });
  }
  if (settings.lwm2mEnabled) {
    const { startLwm2mDoor } = await loadLwm2mDoor();
    const lwm2mDoor = await startLwm2mDoor({
      port: settings.lwm2mPort,
      host: settings.host,
      parts: door,
      logger,
      maxPayloadBytes: settings.ingestMaxBodyBytes,
      uploadLimits: settings.lwm2mUploads,
      onDropped: (reason) => metrics.doorDroppedMessages.inc({ door: 'lwm2m', reason }),
    });
    closers.push(() => lwm2mDoor.close());
  }
  const routes: Route[] = [metricsRoute(metrics, { token: metricsSettings.token }), consoleRoute(), faviconRoute(), ...ingest.routes];
  // Reads that may be a little stale go to a streaming replica when DATABASE_READ_URL names one (src/read-replica).
  const reads = openReadRouting(db, settings, logger);
  closers.push(() => reads.close());
  metrics.useSources({
    readReplicaStaleness: () => {
      const state = reads.state();
      return state.usable ? state.stalenessSeconds : null;
    },
  });
  routes.push(await createGraphQLRoute({ settings, logger, db, store, controlPlane, commands, reads, webhookDb: db }, pubsub));
  // Enforcement points in other processes: the same Governor, so their decisions reach the same Recorder.
  const callers = createServiceCallers(await tokenVerifierFor(settings, logger));
  routes.push(...createAdmissionRoutes({ governor, inferenceSpend, callers }), openapiRoute());
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
    turns,
    rateLimits: createRateLimitDecider(governor, rlsMapping),
    async close(options) {
      cleanStop = options?.clean === true;
      for (const close of closers.reverse()) await close().catch((error: unknown) => logger.warn({ err: error }, 'close failed'));
      await store.close();
      await db.close();
    },
  };
}
