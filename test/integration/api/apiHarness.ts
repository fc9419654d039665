// An in-process API over a real (PGlite or PostgreSQL) database: the ledger, the control plane, the command
// backlog and the projections the API reads, all real. Tests talk to it through yoga.fetch.
import type { Db, Queryable } from '../../../src/db/db.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { projectionWorkers } from '../../../projections/workerProjections.ts';
import { createControlPlane, type ControlPlane } from '../../../src/control-plane/controlPlane.ts';
import { controlPlaneProjections } from '../../../projections/controlPlane.ts';
import { createCommandBacklog } from '../../../src/command-backlog/createCommandBacklog.ts';
import { controlPlaneCeilings } from '../../../src/command-backlog/ceilings.ts';
import { commandBacklogProjection } from '../../../projections/commandBacklog.ts';
import { commandListProjection } from '../../../projections/commandList.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { unresolvedAdmissionsProjection } from '../../../projections/unresolvedAdmissions.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import type { Role } from '../../../src/control-plane/controlPlaneCommand.ts';
import { createApiPubSub, ListenedEventTarget, type ApiPubSub } from '../../../src/api/pubsub.ts';
import { withApiPublishers } from '../../../src/api/publishers.ts';
import { createGraphQLServer, type GraphQLServer } from '../../../src/api/createGraphQLServer.ts';
import { createTokenVerifier } from '../../../src/auth/verifyToken.ts';
import { mintToken } from '../../../src/auth/token.ts';
import type { StorageTarget } from '../../support/databases.ts';

export const TEST_SECRET = 'api-test-secret-with-enough-entropy-0123456789';

export interface GraphQLResponse<Data = Record<string, unknown>> {
  status: number;
  data?: Data | null;
  errors?: Array<{ message: string; path?: string[]; extensions?: Record<string, unknown> }>;
}

export interface ApiHarness {
  db: Db;
  store: EventStore;
  controlPlane: ControlPlane;
  pubsub: ApiPubSub;
  /** Listener counts per pubsub topic (`limitChanged`, `sheds:<tenant>`). */
  events: ListenedEventTarget;
  projections: ProjectionSet;
  yoga: GraphQLServer;
  /** SQL statements the API has sent since the last reset. */
  statements: { count: number };
  token(role: Role, tenant?: string): Promise<string>;
  /** POSTs one operation with the given token (none when null). */
  gql<Data = Record<string, unknown>>(token: string | null, query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse<Data>>;
  dispose(): Promise<void>;
}

function countingQueryable(db: Queryable, statements: { count: number }): Queryable {
  return {
    query(sql, params) {
      statements.count += 1;
      return db.query(sql, params);
    },
    exec(sql) {
      statements.count += 1;
      return db.exec(sql);
    },
  };
}

export async function openApiHarness(target: StorageTarget): Promise<ApiHarness> {
  const opened = await target.open();
  const { db } = opened;
  const store = createPostgresEventStore(db);
  const events = new ListenedEventTarget();
  const pubsub = createApiPubSub(events);
  const projections = await startProjections(
    db,
    store,
    withApiPublishers([...controlPlaneProjections(), commandBacklogProjection, commandListProjection, admissionTrendsProjection, unresolvedAdmissionsProjection], pubsub),
    {
      // On PostgreSQL as the service runs them: the admission trends in a worker process, whose commits reach
      // the sheds subscription through the process' messages.
      workers: opened.env
        ? projectionWorkers({ connectionString: opened.env.DATABASE_URL!, schema: opened.env.GOVERNANCE_DB_SCHEMA }, { isolation: 'process' })
        : undefined,
    },
  );
  const controlPlane = createControlPlane({ db, store });
  const commandBacklog = createCommandBacklog({ db, store, ceilings: controlPlaneCeilings });
  const statements = { count: 0 };
  const yoga = createGraphQLServer({
    db: countingQueryable(db, statements),
    store,
    controlPlane,
    commandBacklog,
    webhookDb: db,
    pubsub,
    verify: createTokenVerifier({ secret: TEST_SECRET }),
    development: process.env.API_DEV === '1',
  });
  return {
    db,
    store,
    controlPlane,
    pubsub,
    events,
    projections,
    yoga,
    statements,
    token: (role, tenant) => mintToken({ secret: TEST_SECRET, role, tenant, sub: `${role.toLowerCase()}-${tenant ?? 'all'}`, ttl: '10m' }),
    async gql(token, query, variables) {
      const response = await yoga.fetch('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      return { status: response.status, ...((await response.json()) as object) };
    },
    async dispose() {
      await projections.close();
      await store.close();
      await opened.dispose();
    },
  };
}
