// GraphQL effectiveLimits under load: autocannon, 50 connections, against our real server (yoga, bearer-token
// auth, query limits, Pothos schema, the control plane's read model on embedded PGlite, the default storage).
// Baseline: the same server in the same run answering `viewer`, a constant resolver that reads
// nothing, so the ratio is what reading and resolving effective limits costs over the server's own overhead.
// Repeated reads of one tenant are answered by the API's effective-limits cache (emptied on every control-plane
// commit, entries at most 1 s old), as they would be in production where enforcement points poll.
// Target: ours >= 0.5 of the baseline's requests/s. Last line: JSON {bench, ours, baseline, ratio, unit, ...}.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { openPglite } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPostgresEventStore } from '../src/ledger/postgres/postgresEventStore.ts';
import { startProjections } from '../src/ledger/projectionSet.ts';
import { createControlPlane } from '../src/control-plane/controlPlane.ts';
import { createCommandBacklog } from '../src/command-backlog/createCommandBacklog.ts';
import { controlPlaneCeilings } from '../src/command-backlog/ceilings.ts';
import { allProjections } from '../projections/index.ts';
import { createApiPubSub } from '../src/api/pubsub.ts';
import { withApiPublishers } from '../src/api/publishers.ts';
import { createGraphQLServer } from '../src/api/createGraphQLServer.ts';
import { createTokenVerifier } from '../src/auth/verifyToken.ts';
import { mintToken } from '../src/auth/token.ts';

const CONNECTIONS = 50;
const SECONDS_PER_ROUND = Number(process.env.BENCH_SECONDS ?? 5);
// Baseline and ours alternate, round by round, so a change in the machine's load hits both alike.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECRET = 'bench-secret-0123456789abcdef0123456789';
const OPERATOR = { id: 'bench', role: 'OPERATOR' } as const;

const db = await openPglite();
await migrate(db);
const store = createPostgresEventStore(db);
const pubsub = createApiPubSub();
const projections = await startProjections(db, store, withApiPublishers(allProjections(), pubsub));
const controlPlane = createControlPlane({ db, store });
await controlPlane.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' });
await controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5000, burst: 10000 });
await controlPlane.setPlatformDefault(OPERATOR, { dimension: 'EGRESS', ratePerSecond: 300 });
await controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' });
await controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'AI_INFERENCE', ratePerSecond: 50, reason: 'bench' });
await projections.waitForCaughtUp();

const yoga = createGraphQLServer({
  db,
  store,
  controlPlane,
  commandBacklog: createCommandBacklog({ db, store, ceilings: controlPlaneCeilings }),
  pubsub,
  verify: createTokenVerifier({ secret: SECRET }),
});
const server = createServer((req, res) => void yoga.handle(req, res));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
const token = await mintToken({ secret: SECRET, role: 'SERVICE', sub: 'bench', ttl: '1h' });

async function probe(query: string, check: (body: string) => boolean): Promise<void> {
  // The answer must be right, or the numbers mean nothing.
  const body = JSON.stringify({ query });
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body });
  const text = await response.text();
  if (response.status !== 200 || !check(text)) throw new Error(`unexpected answer ${response.status}: ${text}`);
}

async function round(query: string) {
  const body = JSON.stringify({ query });
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: SECONDS_PER_ROUND,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
  if (result.non2xx > 0) throw new Error(`${result.non2xx} non-2xx answers under load`);
  // Errors are requests cut off at the end of the run or timed out on a loaded machine: reported, not hidden.
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

const BASELINE_QUERY = '{ viewer { id role } }';
const OURS_QUERY = '{ effectiveLimits(tenantId: "acme") { dimension source tierId value { ratePerSecond burst ceiling } } }';
await probe(BASELINE_QUERY, (text) => text.includes('"role":"SERVICE"'));
await probe(OURS_QUERY, (text) => text.includes('"TENANT_OVERRIDE"') && text.includes('"PLATFORM_DEFAULT"') && text.includes('"TIER"'));

type Round = Awaited<ReturnType<typeof round>>;
const baselineRounds: Round[] = [];
const oursRounds: Round[] = [];
for (let i = 0; i < ROUNDS; i++) {
  baselineRounds.push(await round(BASELINE_QUERY));
  oursRounds.push(await round(OURS_QUERY));
}

/** Requests/s over all rounds; latency percentiles as the median of the rounds' (autocannon gives no merge). */
function combine(rounds: readonly Round[]) {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    requestsPerSecond: rounds.reduce((sum, each) => sum + each.requestsPerSecond, 0) / rounds.length,
    p50Ms: median(rounds.map((each) => each.p50Ms)),
    p99Ms: median(rounds.map((each) => each.p99Ms)),
    errors: rounds.reduce((sum, each) => sum + each.errors, 0),
    timeouts: rounds.reduce((sum, each) => sum + each.timeouts, 0),
  };
}
const baseline = combine(baselineRounds);
const ours = combine(oursRounds);

server.close();
await projections.close();
await store.close();
await db.close();

const ratio = ours.requestsPerSecond / baseline.requestsPerSecond;
console.log(`baseline (viewer, constant): ${baseline.requestsPerSecond.toFixed(0)} req/s, p50 ${baseline.p50Ms} ms, p99 ${baseline.p99Ms} ms`);
console.log(`ours (effectiveLimits):      ${ours.requestsPerSecond.toFixed(0)} req/s, p50 ${ours.p50Ms} ms, p99 ${ours.p99Ms} ms`);
console.log(
  JSON.stringify({
    bench: 'graphql-effective-limits',
    ours: Math.round(ours.requestsPerSecond),
    baseline: Math.round(baseline.requestsPerSecond),
    ratio: Number(ratio.toFixed(3)),
    unit: 'requests/s',
    target: 0.5,
    met: ratio >= 0.5,
    connections: CONNECTIONS,
    secondsEach: SECONDS_PER_ROUND * ROUNDS,
    oursP50Ms: ours.p50Ms,
    oursP99Ms: ours.p99Ms,
    baselineP50Ms: baseline.p50Ms,
    baselineP99Ms: baseline.p99Ms,
    oursErrors: ours.errors,
    oursTimeouts: ours.timeouts,
    baselineErrors: baseline.errors,
    storage: 'pglite',
  }),
);
