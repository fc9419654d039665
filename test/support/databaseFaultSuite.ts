// What the database-fault suites share: database-outage, postgres-cut and postgres-failover run the service in
// this process on a PostgreSQL of the suite's own (startFaultSuiteService); chaos runs it in a process of its
// own. All of them drive traffic while the database fails and then check that the ledger agrees with what the
// clients were told: the admitted ingest units are exactly the readings answered 202 (ledgerAdmittedHttpUnits),
// and every command accepted is in the ledger exactly once and no refused one is (expectCommandsAsTold).
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { expect } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { mintToken } from '../../src/auth/token.ts';
import { readSettings } from '../../src/config.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { commandsStream } from '../../src/ledger/catalog/commands.ts';
import type { RecordedEvent } from '../../src/ledger/eventStore.ts';
import { startService, type Service } from '../../src/service.ts';
import type { CommandsTold } from './commandClient.ts';
import { OPERATOR } from './controlPlaneHarness.ts';
import { admissionEntriesOf } from './readLedger.ts';

export interface FaultSuiteService {
  service: Service;
  baseUrl: string;
  /** An OPERATOR token for the GraphQL API. */
  token: string;
  /** Posts one message of two readings for acme with its key; counts the readings answered 202. */
  ingest(): Promise<Response>;
  /**
   * Posts (ingest) until `stopped()`, calling `answered` after each answer: 202, or 503 with Retry-After while the
   * database is away; anything else goes into `problems`. After a 503 it waits 100 ms, as a client told to
   * retry later does: a 503 comes back at once, and a loop that did not wait would send over the edge's per-IP
   * limit (1,000 requests/s) and be answered 429 for its own pace, not for the fault.
   */
  ingestUntil(stopped: () => boolean, problems: string[], answered: () => void): Promise<void>;
  /** A GraphQL operation with the OPERATOR token. */
  graphql(query: string, variables?: Record<string, unknown>): Promise<Response>;
  /** Readings answered 202 so far: what the ledger must hold as admitted once every fault is over. */
  readonly acceptedReadings: number;
  /** Stops the listener and the service and removes its data directory; the suite's servers are its own to stop. */
  close(): Promise<void>;
}

/**
 * The service in this process on `databaseUrl`, listening on a free port of 127.0.0.1, with tenant acme on tier
 * standard and nothing refused by a limit (INGEST, API_REQUESTS and the edge's per-IP limit at 1,000,000), and an
 * ingest key of acme's.
 * The first post, answered 202, has taught the Governor acme's ceilings and the front door the key.
 */
export async function startFaultSuiteService(suite: string, databaseUrl: string): Promise<FaultSuiteService> {
  const jwtSecret = `${suite}-suite-secret-0123456789abcdef0123456789`;
  const dataDir = await mkdtemp(path.join(tmpdir(), `gl-${suite}-`));
  let service: Service | undefined;
  let server: Server | undefined;
  const close = async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.close();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    // Nothing refused by a limit includes the edge's per-IP limit (1,000 requests a second by default): every
    // client here is 127.0.0.1, and on a fast host the ingest and command loops together passed it.
    service = await startService(
      readSettings({ DATABASE_URL: databaseUrl, GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_SECRET: jwtSecret, EDGE_IP_RATE_PER_SECOND: '1000000' }),
      pino({ level: 'silent' }),
    );
    server = createServer(service, service.routes);
    const baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    for (const dimension of ['INGEST', 'API_REQUESTS'] as const) {
      const limit = dimension === 'INGEST' ? { ratePerSecond: 1_000_000, burst: 1_000_000 } : { ratePerSecond: 1_000_000 };
      expect(
        await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension, ...limit, reason: `${suite} suite: nothing refused by a limit` }),
      ).toMatchObject({ status: 'applied' });
    }
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    const key = registered.key;
    const token = await mintToken({ secret: jwtSecret, role: 'OPERATOR', sub: `${suite}-suite`, ttl: '30m' });
    let acceptedReadings = 0;
    const running: FaultSuiteService = {
      service,
      baseUrl,
      token,
      async ingest() {
        const response = await fetch(`${baseUrl}/v1/ingest/acme`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-device-key': key },
          body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { temperature: 21.5, pressure: 1.2 } }] }),
          signal: AbortSignal.timeout(60_000),
        });
        if (response.status === 202) acceptedReadings += 2;
        return response;
      },
      async ingestUntil(stopped, problems, answered) {
        while (!stopped()) {
          const response = await running.ingest();
          const unavailable = response.status === 503 && response.headers.get('retry-after');
          if (response.status !== 202 && !unavailable) problems.push(`ingest: ${response.status} ${await response.text()}`);
          else await response.arrayBuffer();
          answered();
          if (unavailable) await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      graphql: (query, variables) =>
        fetch(`${baseUrl}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query, variables }),
        }),
      get acceptedReadings() {
        return acceptedReadings;
      },
      close,
    };
    expect((await running.ingest()).status).toBe(202);
    await service.governor.loadsSettled();
    return running;
  } catch (error) {
    await close();
    throw error;
  }
}

/** The units of `tenantId`'s HTTP ingest the ledger holds in the field given (admitted by default). */
export function ledgerHttpIngest(
  ledger: readonly RecordedEvent[],
  tenantId: string,
  field: 'admittedUnits' | 'rejectedMessages' = 'admittedUnits',
): number {
  return admissionEntriesOf(ledger.filter((event) => event.stream === ADMISSIONS_STREAM))
    .filter((entry) => entry.tenantId === tenantId && entry.dimension === 'INGEST' && entry.allowance === 'HTTP')
    .reduce((sum, entry) => sum + (entry[field] ?? 0), 0);
}

/**
 * Every command of `tenantId` whose id starts with `prefix` that the client was told was accepted is enqueued
 * in the ledger exactly once; none it was told was refused is; and nothing else of them is.
 */
export function expectCommandsAsTold(ledger: readonly RecordedEvent[], tenantId: string, prefix: string, told: Pick<CommandsTold, 'accepted' | 'refused'>): void {
  const enqueued = ledger
    .filter((event) => event.stream === commandsStream(tenantId) && event.type === 'CommandEnqueued')
    .map((event) => (event.data as { commandId: string }).commandId)
    .filter((id) => id.startsWith(prefix));
  const times = new Map<string, number>();
  for (const id of enqueued) times.set(id, (times.get(id) ?? 0) + 1);
  expect(told.accepted.filter((id) => times.get(id) !== 1)).toEqual([]);
  expect(told.refused.filter((id) => times.has(id))).toEqual([]);
  expect(enqueued.length).toBe(told.accepted.length);
}
