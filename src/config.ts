// Settings come from the environment only; the names are a contract (docs/governance-model.md) and README.md lists them.
import { hostname } from 'node:os';
import type { ProjectionIsolation } from './ledger/index.ts';
import { isNiceValue, isRealtimePriority } from './sessionPriority.ts';

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  /** Schema to use on DATABASE_URL (tests and multi-tenant hosting of several ledgers in one database). */
  dbSchema?: string;
  /** DATABASE_READ_URL: a streaming replica of DATABASE_URL's primary, for reads that may be a little stale. */
  readDatabaseUrl?: string;
  /** GOVERNANCE_READ_MAX_STALENESS_SECONDS: a replica further behind than this is not read from (default 5). */
  readMaxStalenessSeconds: number;
  eventStoreUrl?: string;
  redisUrl?: string;
  /** REDIS_CLUSTER: `on` when REDIS_URL names a Redis Cluster (implied by several comma-separated URLs). */
  redisCluster: boolean;
  natsUrl?: string;
  /**
   * GOVERNANCE_NATS_REPLICAS: the replicas of the ingest stream when the service creates it (default: 3 when
   * the NATS cluster has at least 3 servers, else 1; src/doors/pipeline/natsSink.ts).
   */
  natsReplicas?: number;
  jwtSecret?: string;
  jwksUrl?: string;
  /** GOVERNANCE_JWT_ISSUER / GOVERNANCE_JWT_AUDIENCE: checked on every token when set, and set by `governance token`. */
  jwtIssuer?: string;
  jwtAudience?: string;
  /** GOVERNANCE_JWT_MAX_TTL: the longest token lifetime (exp - iat) accepted, in seconds (default 24 h). */
  jwtMaxTtlSeconds: number;
  service: string;
  trustedProxyCidrs: string[];
  /** EDGE_IP_RATE_PER_SECOND: the instance-level per-IP limit at the HTTP edge (default 1000 requests/s). */
  edgeIpRatePerSecond: number;
  /**
   * GOVERNANCE_REQUEST_TIMEOUT_SECONDS: an HTTP request whose headers and body have not all arrived within this
   * is answered 408 within this and its connection closed (default 10 s; src/http-server/server.ts).
   */
  requestTimeoutSeconds: number;
  /** INGEST_MAX_BODY_BYTES: HTTP ingest bodies above this get 413 (default 1 MiB). */
  ingestMaxBodyBytes: number;
  /** GOVERNANCE_COMMAND_TTL_SECONDS: a queued command undelivered this long expires and frees its slot (default 1 h). */
  commandTtlSeconds: number;
  /**
   * GOVERNANCE_READY_MAX_LAG_SECONDS: /readyz answers 503 while a projection's oldest event still to apply is
   * older than this (default 30 s).
   */
  readyMaxLagSeconds: number;
  /**
   * GOVERNANCE_DRAIN_SECONDS: on SIGTERM, /readyz answers 503 this long while every request is still served,
   * so a load balancer stops sending before the listener closes (default 5; 0 closes at once).
   */
  drainSeconds: number;
  /**
   * GOVERNANCE_NICE: the nice value (-20..19) the service sets for its session on Linux at start (its share of the
   * cores beside PostgreSQL, its projection workers and the rest of the host: src/sessionPriority.ts); unset
   * leaves it as started. A value below 0 needs CAP_SYS_NICE; refused, the service says so and runs as it was.
   */
  nice?: number;
  /**
   * GOVERNANCE_REALTIME_PRIORITY: on Linux, the SCHED_RR priority (1..99) the service runs its admitting thread at
   * (src/sessionPriority.ts): it takes a core as soon as it has work, ahead of PostgreSQL, the projection workers
   * and the rest of the host; unset leaves the normal policy. Needs CAP_SYS_NICE; refused, the service says so and
   * runs as it was.
   */
  realtimePriority?: number;
  /** GOVERNANCE_REDIS_KEY_PREFIX: the prefix of every shared counter's key in Redis (default `governance:`). */
  redisKeyPrefix: string;
  /** MQTT_URL: the platform broker the MQTT doors consume from (MQTT live and backlog, Sparkplug B); off when unset. */
  mqttUrl?: string;
  /** MQTT_TOPIC_ROOT: the first level of `<root>/<tenant>/<device>/telemetry` (default devicechain). */
  mqttTopicRoot: string;
  /** MQTT_SHARE_GROUP: the MQTT 5 shared-subscription group replicas split the traffic in (default governance). */
  mqttShareGroup: string;
  /** MQTT_CLIENT_ID: this replica's client ID; its persistent session is what the backlog drains (default governance-<host>). */
  mqttClientId: string;
  /** MQTT_SESSION_EXPIRY_SECONDS: how long the broker keeps the session and queues for it while away (default 1 day). */
  mqttSessionExpirySeconds: number;
  /**
   * MQTT_END_SESSION_ON_STOP: `on` (default): a clean stop (SIGTERM, SIGINT) ends the broker doors' sessions, so
   * nothing of the stopped service stays on the broker; `off` keeps them (the broker queues for the next start
   * for MQTT_SESSION_EXPIRY_SECONDS). A crash always leaves them, for the next start to drain.
   */
  mqttEndSessionOnStop: boolean;
  /** GOVERNANCE_BACKLOG_AFTER_SECONDS: a message sent longer ago than this is charged on BACKLOG at its send time (default 5). */
  backlogAfterSeconds: number;
  /** SPARKPLUG_GROUP_TENANTS: `group=tenant,...`; a Sparkplug group not listed is its own tenant. */
  sparkplugGroupTenants: ReadonlyMap<string, string>;
  /** GOVERNANCE_LWM2M: `on` starts the LwM2M CoAP endpoint. */
  lwm2mEnabled: boolean;
  /** GOVERNANCE_LWM2M_PORT: its UDP port (default 5683). */
  lwm2mPort: number;
  /**
   * The bounds of block-wise (Block1) LwM2M Sends in flight: GOVERNANCE_LWM2M_UPLOADS_PER_ADDRESS per client
   * address (default 4), GOVERNANCE_LWM2M_UPLOADS_MAX in all (default 1024), GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES
   * held by all of them (default 16 MiB), and GOVERNANCE_LWM2M_UPLOAD_IDLE_SECONDS without a block before one
   * is dropped (default 60).
   */
  lwm2mUploads: { perHost: number; maxUploads: number; maxBufferedBytes: number; idleMs: number };
  logLevel: string;
  /**
   * GOVERNANCE_LEDGER_RETENTION_DAYS: raw admission summaries are kept this many days, then archived to
   * GOVERNANCE_LEDGER_ARCHIVE_DIR and dropped from the ledger (default 30); `forever` (undefined here) keeps them.
   */
  ledgerRetentionDays: number | undefined;
  /** GOVERNANCE_LEDGER_ARCHIVE_DIR: where archived days are written (default <GOVERNANCE_DATA_DIR>/ledger-archive). */
  ledgerArchiveDir: string;
  /** GOVERNANCE_LEDGER_ARCHIVE_COMMAND: run with each archive file ($1) and its manifest ($2) before the day is dropped. */
  ledgerArchiveCommand?: string;
  /** The verifiable ledger (docs/verifiable-ledger.md): GOVERNANCE_CHECKPOINT_SECONDS etc., see ledgerVerifiable. */
  ledgerVerifiable: LedgerVerifiableSettings;
  /**
   * GOVERNANCE_PROJECTION_WORKERS: where the admission-trends and admission-demand projections run when the ledger
   * is on PostgreSQL (DATABASE_URL, no EVENTSTORE_URL): `process` (the default; `on` says the same) in a child
   * process each, in a session of its own; `thread` in a worker thread each; `off` in the service's thread
   * (src/ledger/README.md, ProjectionIsolation).
   */
  projectionWorkers: ProjectionIsolation | 'off';
  /**
   * GOVERNANCE_PROJECTION_WORKER_MAX_HEAP_MB: a projection worker's heap (default 1024); a page that needs
   * more ends the worker, not the service, and an event that does so alone is quarantined (src/ledger/README.md).
   */
  projectionWorkerMaxHeapMb: number;
  /**
   * GOVERNANCE_PROJECTION_MAX_BLOCKED_SECONDS: how long a projection worker's event loop may stay blocked
   * while it applies a page before the worker is ended (default 30); an event that does so alone is quarantined.
   */
  projectionMaxBlockedSeconds: number;
  /** GOVERNANCE_GRPC_PORT: Envoy's rate limit service (gRPC) listens here (default 8081). */
  grpcPort: number;
  /** GOVERNANCE_GRPC_TLS_CERT/_KEY (PEM files): TLS on the gRPC port; with _CLIENT_CA, client certificates are required. */
  grpcTls?: { certFile: string; keyFile: string; clientCaFile?: string };
  /**
   * GOVERNANCE_GRPC_TOKEN (at least 32 bytes): every gRPC call must carry `authorization: Bearer <token>`, and the
   * port listens on HOST. Without it and without client certificates the port listens on 127.0.0.1 only.
   */
  grpcToken?: string;
}

/** GOVERNANCE_REQUEST_TIMEOUT_SECONDS' default: a 1 MiB body at 100 KiB/s, a slow device link, fits. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 10;

/** The verifiable ledger's settings (docs/verifiable-ledger.md). */
export interface LedgerVerifiableSettings {
  /** GOVERNANCE_CHECKPOINT_SECONDS: a checkpoint is signed this often while the tree grew (default 10). */
  checkpointSeconds: number;
  /** GOVERNANCE_CHECKPOINT_COMMAND: run by /bin/sh with each signed checkpoint's file as $1. */
  checkpointCommand?: string | undefined;
  /** GOVERNANCE_LEDGER_SIGNING_KEY: the Ed25519 key (PKCS#8 PEM, or a file holding it); else <data dir>/ledger-signing-key.pem. */
  signingKey?: string | undefined;
  /** GOVERNANCE_LEDGER_ORIGIN: the log's name in checkpoints (default governance-ledger.invalid/<ledger id>). */
  origin?: string | undefined;
  /** GOVERNANCE_LEDGER_VERIFY_SECONDS: the service verifies the stored ledger this often (default 3600; 0: never). */
  verifySeconds: number;
}

/** GOVERNANCE_SERVICE's default: the DeviceChain service whose traffic is governed. */
export const DEFAULT_SERVICE = 'ingest';

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const optional = (name: string) => (env[name] && env[name]!.trim() !== '' ? env[name]!.trim() : undefined);
  return {
    port: Number.parseInt(env.PORT ?? '4000', 10),
    host: env.HOST ?? '0.0.0.0',
    dataDir: optional('GOVERNANCE_DATA_DIR') ?? './data',
    databaseUrl: optional('DATABASE_URL'),
    dbSchema: optional('GOVERNANCE_DB_SCHEMA'),
    readDatabaseUrl: optional('DATABASE_READ_URL'),
    readMaxStalenessSeconds: positiveInteger(optional('GOVERNANCE_READ_MAX_STALENESS_SECONDS'), 5, 'GOVERNANCE_READ_MAX_STALENESS_SECONDS'),
    eventStoreUrl: optional('EVENTSTORE_URL'),
    redisUrl: optional('REDIS_URL'),
    redisCluster: onOff(optional('REDIS_CLUSTER'), false, 'REDIS_CLUSTER'),
    natsUrl: optional('NATS_URL'),
    natsReplicas: streamReplicas(optional('GOVERNANCE_NATS_REPLICAS')),
    jwtSecret: jwtSecret(optional('GOVERNANCE_JWT_SECRET')),
    jwksUrl: optional('GOVERNANCE_JWKS_URL'),
    jwtIssuer: optional('GOVERNANCE_JWT_ISSUER'),
    jwtAudience: optional('GOVERNANCE_JWT_AUDIENCE'),
    jwtMaxTtlSeconds: duration(optional('GOVERNANCE_JWT_MAX_TTL'), 24 * 60 * 60, 'GOVERNANCE_JWT_MAX_TTL'),
    // The spec names metrics devicechain_<service>_governance_...: the service this library governs by default is
    // ingest, so the names read devicechain_ingest_governance_... (not governance_governance).
    service: optional('GOVERNANCE_SERVICE') ?? DEFAULT_SERVICE,
    trustedProxyCidrs: (optional('TRUSTED_PROXY_CIDRS') ?? '')
      .split(',')
      .map((cidr) => cidr.trim())
      .filter(Boolean),
    edgeIpRatePerSecond: positiveInteger(optional('EDGE_IP_RATE_PER_SECOND'), 1000, 'EDGE_IP_RATE_PER_SECOND'),
    requestTimeoutSeconds: positiveInteger(optional('GOVERNANCE_REQUEST_TIMEOUT_SECONDS'), DEFAULT_REQUEST_TIMEOUT_SECONDS, 'GOVERNANCE_REQUEST_TIMEOUT_SECONDS'),
    ingestMaxBodyBytes: positiveInteger(optional('INGEST_MAX_BODY_BYTES'), 1024 * 1024, 'INGEST_MAX_BODY_BYTES'),
    commandTtlSeconds: positiveInteger(optional('GOVERNANCE_COMMAND_TTL_SECONDS'), 3600, 'GOVERNANCE_COMMAND_TTL_SECONDS'),
    readyMaxLagSeconds: positiveInteger(optional('GOVERNANCE_READY_MAX_LAG_SECONDS'), 30, 'GOVERNANCE_READY_MAX_LAG_SECONDS'),
    drainSeconds: wholeNumber(optional('GOVERNANCE_DRAIN_SECONDS'), 5, 'GOVERNANCE_DRAIN_SECONDS'),
    nice: optionalWholeIn(optional('GOVERNANCE_NICE'), 'GOVERNANCE_NICE', isNiceValue, -20, 19),
    realtimePriority: optionalWholeIn(optional('GOVERNANCE_REALTIME_PRIORITY'), 'GOVERNANCE_REALTIME_PRIORITY', isRealtimePriority, 1, 99),
    redisKeyPrefix: redisKeyPrefix(optional('GOVERNANCE_REDIS_KEY_PREFIX') ?? 'governance:'),
    mqttUrl: optional('MQTT_URL'),
    mqttTopicRoot: topicLevel(optional('MQTT_TOPIC_ROOT') ?? 'devicechain', 'MQTT_TOPIC_ROOT'),
    mqttShareGroup: topicLevel(optional('MQTT_SHARE_GROUP') ?? 'governance', 'MQTT_SHARE_GROUP'),
    mqttClientId: optional('MQTT_CLIENT_ID') ?? `governance-${hostname()}`,
    mqttSessionExpirySeconds: positiveInteger(optional('MQTT_SESSION_EXPIRY_SECONDS'), 86_400, 'MQTT_SESSION_EXPIRY_SECONDS'),
    mqttEndSessionOnStop: onOff(optional('MQTT_END_SESSION_ON_STOP'), true, 'MQTT_END_SESSION_ON_STOP'),
    backlogAfterSeconds: positiveInteger(optional('GOVERNANCE_BACKLOG_AFTER_SECONDS'), 5, 'GOVERNANCE_BACKLOG_AFTER_SECONDS'),
    sparkplugGroupTenants: groupTenants(optional('SPARKPLUG_GROUP_TENANTS')),
    lwm2mEnabled: optional('GOVERNANCE_LWM2M') === 'on',
    lwm2mPort: portNumber(optional('GOVERNANCE_LWM2M_PORT'), 5683, 'GOVERNANCE_LWM2M_PORT'),
    lwm2mUploads: {
      perHost: positiveInteger(optional('GOVERNANCE_LWM2M_UPLOADS_PER_ADDRESS'), 4, 'GOVERNANCE_LWM2M_UPLOADS_PER_ADDRESS'),
      maxUploads: positiveInteger(optional('GOVERNANCE_LWM2M_UPLOADS_MAX'), 1024, 'GOVERNANCE_LWM2M_UPLOADS_MAX'),
      maxBufferedBytes: positiveInteger(optional('GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES'), 16 * 1024 * 1024, 'GOVERNANCE_LWM2M_UPLOADS_MAX_BYTES'),
      idleMs: positiveInteger(optional('GOVERNANCE_LWM2M_UPLOAD_IDLE_SECONDS'), 60, 'GOVERNANCE_LWM2M_UPLOAD_IDLE_SECONDS') * 1000,
    },
    logLevel: optional('LOG_LEVEL') ?? 'info',
    ledgerRetentionDays: retentionDays(optional('GOVERNANCE_LEDGER_RETENTION_DAYS')),
    ledgerArchiveDir: optional('GOVERNANCE_LEDGER_ARCHIVE_DIR') ?? `${(optional('GOVERNANCE_DATA_DIR') ?? './data').replace(/\/+$/, '')}/ledger-archive`,
    ledgerArchiveCommand: optional('GOVERNANCE_LEDGER_ARCHIVE_COMMAND'),
    ledgerVerifiable: {
      checkpointSeconds: positiveInteger(optional('GOVERNANCE_CHECKPOINT_SECONDS'), 10, 'GOVERNANCE_CHECKPOINT_SECONDS'),
      checkpointCommand: optional('GOVERNANCE_CHECKPOINT_COMMAND'),
      signingKey: optional('GOVERNANCE_LEDGER_SIGNING_KEY'),
      origin: optional('GOVERNANCE_LEDGER_ORIGIN'),
      verifySeconds: wholeNumber(optional('GOVERNANCE_LEDGER_VERIFY_SECONDS'), 3600, 'GOVERNANCE_LEDGER_VERIFY_SECONDS'),
    },
    projectionWorkers: projectionWorkers(optional('GOVERNANCE_PROJECTION_WORKERS')),
    projectionWorkerMaxHeapMb: positiveInteger(optional('GOVERNANCE_PROJECTION_WORKER_MAX_HEAP_MB'), 1024, 'GOVERNANCE_PROJECTION_WORKER_MAX_HEAP_MB'),
    projectionMaxBlockedSeconds: positiveInteger(optional('GOVERNANCE_PROJECTION_MAX_BLOCKED_SECONDS'), 30, 'GOVERNANCE_PROJECTION_MAX_BLOCKED_SECONDS'),
    grpcPort: portNumber(optional('GOVERNANCE_GRPC_PORT'), 8081, 'GOVERNANCE_GRPC_PORT'),
    grpcTls: grpcTls(optional('GOVERNANCE_GRPC_TLS_CERT'), optional('GOVERNANCE_GRPC_TLS_KEY'), optional('GOVERNANCE_GRPC_TLS_CLIENT_CA')),
    grpcToken: grpcToken(optional('GOVERNANCE_GRPC_TOKEN')),
  };
}

/** A key prefix with a brace would move the hash tag off the tenant name: a tenant's keys would span slots. */
function redisKeyPrefix(text: string): string {
  if (/[{}]/.test(text)) throw new Error(`GOVERNANCE_REDIS_KEY_PREFIX must not contain { or } (the tenant name is each key's Redis Cluster hash tag), not "${text}"`);
  return text;
}

/** JetStream keeps 1 to 5 replicas of a stream. */
function streamReplicas(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 5) throw new Error(`GOVERNANCE_NATS_REPLICAS must be a whole number from 1 to 5, not "${text}"`);
  return value;
}

/** An optional whole number in `from`..`to` (`isValid` holds it to them), named `name` in the error. */
function optionalWholeIn(text: string | undefined, name: string, isValid: (value: number) => boolean, from: number, to: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === '' || !isValid(value)) throw new Error(`${name} must be a whole number from ${from} to ${to}, not "${text}"`);
  return value;
}

function projectionWorkers(text: string | undefined): Settings['projectionWorkers'] {
  if (text === undefined || text === 'on' || text === 'process') return 'process';
  if (text === 'thread' || text === 'off') return text;
  throw new Error(`GOVERNANCE_PROJECTION_WORKERS must be process, thread, on (process) or off, not "${text}"`);
}

function onOff(text: string | undefined, fallback: boolean, name: string): boolean {
  if (text === undefined) return fallback;
  if (text === 'on' || text === 'off') return text === 'on';
  throw new Error(`${name} must be on or off, not "${text}"`);
}

function portNumber(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new Error(`${name} must be a port number from 0 to 65535, not "${text}"`);
  return value;
}

/** Half a TLS setting would silently mean plain text: refused at start instead. */
function grpcTls(certFile: string | undefined, keyFile: string | undefined, clientCaFile: string | undefined): Settings['grpcTls'] {
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined) throw new Error('GOVERNANCE_GRPC_TLS_CLIENT_CA needs GOVERNANCE_GRPC_TLS_CERT and GOVERNANCE_GRPC_TLS_KEY');
    return undefined;
  }
  if (certFile === undefined || keyFile === undefined) throw new Error('GOVERNANCE_GRPC_TLS_CERT and GOVERNANCE_GRPC_TLS_KEY go together');
  return clientCaFile === undefined ? { certFile, keyFile } : { certFile, keyFile, clientCaFile };
}

/** A token short enough to guess is no protection: 32 bytes at least, as the JWT secret. */
export const MIN_GRPC_TOKEN_BYTES = 32;

function grpcToken(text: string | undefined): string | undefined {
  if (text !== undefined && Buffer.byteLength(text, 'utf8') < MIN_GRPC_TOKEN_BYTES) {
    throw new Error(`GOVERNANCE_GRPC_TOKEN must be at least ${MIN_GRPC_TOKEN_BYTES} bytes (it has ${Buffer.byteLength(text, 'utf8')})`);
  }
  return text;
}

/** One topic level: no separators or wildcards, or the subscription would mean something else. */
function topicLevel(text: string, name: string): string {
  if (text === '' || /[/+#]/.test(text) || text.includes('\0')) throw new Error(`${name} must be one MQTT topic level without / + or #, not "${text}"`);
  return text;
}

/** `group=tenant,group2=tenant2`: a malformed pair stops the service at start rather than sending a group elsewhere. */
function groupTenants(text: string | undefined): ReadonlyMap<string, string> {
  const map = new Map<string, string>();
  for (const pair of (text ?? '').split(',').map((each) => each.trim()).filter(Boolean)) {
    const [group, tenant, ...rest] = pair.split('=').map((each) => each.trim());
    if (!group || !tenant || rest.length > 0) throw new Error(`SPARKPLUG_GROUP_TENANTS must be group=tenant pairs separated by commas, not "${pair}"`);
    map.set(group, tenant);
  }
  return map;
}

/** A bad number in the environment stops the service at start, naming the variable, rather than meaning "no limit". */
function positiveInteger(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number of at least 1, not "${text}"`);
  return value;
}

/** A count that may be 0 (a delay that can be turned off); anything else stops the service at start. */
function wholeNumber(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number of at least 0, not "${text}"`);
  return value;
}

/** Days of raw summaries kept (default 30), or `forever`. */
function retentionDays(text: string | undefined): number | undefined {
  if (text === undefined) return 30;
  if (text === 'forever') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 36_500) {
    throw new Error(`GOVERNANCE_LEDGER_RETENTION_DAYS must be a whole number of days from 1 to 36500, or forever, not "${text}"`);
  }
  return value;
}

/** HS256 with a short secret can be brute-forced offline from any one token: 32 bytes (256 bits) at least. */
export const MIN_JWT_SECRET_BYTES = 32;

function jwtSecret(text: string | undefined): string | undefined {
  if (text !== undefined && Buffer.byteLength(text, 'utf8') < MIN_JWT_SECRET_BYTES) {
    throw new Error(`GOVERNANCE_JWT_SECRET must be at least ${MIN_JWT_SECRET_BYTES} bytes (it has ${Buffer.byteLength(text, 'utf8')})`);
  }
  return text;
}

/** Seconds, or a number with s, m, h or d: "90", "30m", "24h", "7d". */
function duration(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const match = /^(\d+)\s*([smhd]?)$/.exec(text);
  const seconds = match ? Number(match[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'] : Number.NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1) throw new Error(`${name} must be a duration such as 3600, 30m or 24h, not "${text}"`);
  return seconds;
}
