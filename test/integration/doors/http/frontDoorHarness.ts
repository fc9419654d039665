// A listening front door built from real parts: the Governor, ingest credentials in a migrated database,
// the HTTP server of src/server.ts on a free port. Limits come from a table of tenant records (the
// LimitSource port); the control plane's read model behind that port is exercised by the end-to-end suite.
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Governor } from '../../../../src/governance/index.ts';
import type { AdmissionSummary, Dimension, GovernorOptions, LimitSource, Recorder, TenantGovernanceRecord } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { cachedCredentialLookup } from '../../../../src/doors/pipeline/credentialCache.ts';
import { findIngestCredential, registerIngestCredential, type IngestCredential } from '../../../../src/auth/ingestKeys.ts';
import type { FrontDoorDeps } from '../../../../src/doors/http/frontDoorDeps.ts';
import type { EdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import { createIngestRoutes } from '../../../../src/doors/http/routes.ts';
import { parseTrustedProxies } from '../../../../src/http-server/trustedProxies.ts';
import type { ReadingSink } from '../../../../src/doors/pipeline/sink.ts';
import { createServer, listen } from '../../../../src/http-server/server.ts';
import type { Db } from '../../../../src/db/db.ts';

export class TableLimitSource implements LimitSource {
  readonly records = new Map<string, TenantGovernanceRecord>();
  platformDefaults: Partial<Record<Dimension, unknown>> = {};

  tenant(tenantId: string, levels: TenantGovernanceRecord['levels'], extra: Partial<TenantGovernanceRecord> = {}): this {
    this.records.set(tenantId, { tenantId, tierId: null, levels, ...extra });
    return this;
  }

  async loadTenants(tenantIds: readonly string[]) {
    return new Map(tenantIds.flatMap((id) => (this.records.has(id) ? [[id, this.records.get(id)!] as const] : [])));
  }

  async loadPlatformDefaults() {
    return this.platformDefaults;
  }
}

export class CollectingRecorder implements Recorder {
  readonly admissions: AdmissionSummary[] = [];
  async record(admissions: readonly AdmissionSummary[]): Promise<void> {
    this.admissions.push(...admissions.map((each) => ({ ...each })));
  }
  /** A count field a summary leaves out is 0 (AdmissionSummary): a summary of admissions alone has no quota counts. */
  sum(tenantId: string, allowance: string, field: keyof AdmissionSummary): number {
    return this.admissions
      .filter((each) => each.tenantId === tenantId && each.allowance === allowance)
      .reduce((total, each) => total + ((each[field] as number | undefined) ?? 0), 0);
  }
}

export interface FrontDoorOptions {
  db: Db;
  limits: TableLimitSource;
  edgeLimit: EdgeLimit;
  trustedProxyCidrs?: string[];
  sink?: ReadingSink;
  maxBodyBytes?: number;
  governor?: Partial<GovernorOptions>;
  now?: () => number;
}

export interface RunningFrontDoor {
  baseUrl: string;
  port: number;
  governor: Governor;
  sink: CountingSink | ReadingSink;
  recorder: CollectingRecorder;
  logLines: Record<string, unknown>[];
  register(credential: IngestCredential): Promise<string>;
  close(): Promise<void>;
}

export async function startFrontDoor(options: FrontDoorOptions): Promise<RunningFrontDoor> {
  const logLines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
        callback();
      },
    }),
  );
  const recorder = new CollectingRecorder();
  const governor = new Governor({ limitSource: options.limits, recorder, now: options.now, ...options.governor });
  const sink = options.sink ?? createCountingSink();
  const deps: FrontDoorDeps = {
    governor,
    edgeLimit: options.edgeLimit,
    trustedProxies: parseTrustedProxies(options.trustedProxyCidrs ?? []),
    findCredential: cachedCredentialLookup((key) => findIngestCredential(options.db, key)),
    sink,
    logger,
    maxBodyBytes: options.maxBodyBytes,
    now: options.now,
  };
  const server: Server = createServer({ logger, readiness: [] }, createIngestRoutes(deps));
  const address = await listen(server, 0, '127.0.0.1');
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    port: address.port,
    governor,
    sink,
    recorder,
    logLines,
    async register(credential) {
      const registered = await registerIngestCredential(options.db, credential);
      if (registered.status !== 'registered') throw new Error(registered.message);
      return registered.key;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await governor.close();
    },
  };
}

/** `n` readings in one body: one measurement key each. */
export function readingsBody(n: number, deviceId?: string): string {
  return JSON.stringify({
    readings: Array.from({ length: n }, (_, i) => ({ ...(deviceId ? { deviceId } : {}), measurements: { [`m${i}`]: i } })),
  });
}
