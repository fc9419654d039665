// Enqueues per second against the backlog ceiling on PostgreSQL, 16 concurrent clients, against the bare
// minimum that enforces a ceiling: a conditional single-row UPDATE ... WHERE undelivered < ceiling, in the
// same run. Ours adds the ceiling read, the command row (idempotency), the ledger event and a transaction
// around them. Both sides hammer ONE tenant (one guard row): the worst case, every enqueue queues on the
// same row lock. A second figure spreads the same load over 16 tenants. Fresh schema, dropped at the end.
// Rounds of ours and of the baseline alternate, and each figure is the median of its rounds, so a machine
// busy with other work weighs on both sides alike. BENCH_QUICK=1: short rounds, to prove it runs.
// Last line: JSON.
import type { Queryable } from '../src/db/db.ts';
import type { CeilingSource } from '../src/command-backlog/types.ts';
import { createDatabaseCommandBacklog } from '../src/command-backlog/postgres/createDatabaseCommandBacklog.ts';
import { prepared } from '../src/db/preparedStatements.ts';
import { withBenchSchema } from './support/benchSchema.ts';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const QUICK = process.env.BENCH_QUICK === '1';
const CLIENTS = 16;
const ROUND_MS = QUICK ? 1_000 : 3_000;
const ROUNDS = QUICK ? 2 : 5;
// High enough that nothing is refused: both sides measure the accepting path.
const CEILING = 1_000_000;

// The ceiling comes from a table read in the enqueue's transaction, as the control plane's read model would;
// several tenants' ceilings in one query, as controlPlaneCeilings.many does (a prepared statement, as its
// loadTenantGovernance is).
const CEILINGS_SQL = prepared('SELECT tenant_id, ceiling FROM bench_ceilings WHERE tenant_id = ANY($1::text[])');
const benchCeilings: CeilingSource = Object.assign(
  async (q: Queryable, tenantId: string) => {
    const { rows } = await q.query<{ ceiling: number }>('SELECT ceiling FROM bench_ceilings WHERE tenant_id = $1', [tenantId]);
    return rows[0] ? { ceiling: rows[0].ceiling, source: 'TIER' as const } : null;
  },
  {
    many: async (q: Queryable, tenantIds: readonly string[]) => {
      const { rows } = await q.query<{ tenant_id: string; ceiling: number }>(CEILINGS_SQL, [tenantIds]);
      return new Map(rows.map((row) => [row.tenant_id, { ceiling: row.ceiling, source: 'TIER' as const }]));
    },
  },
);

/** Runs CLIENTS concurrent loops of `once` for ROUND_MS; returns operations per second. */
async function rate(once: (client: number, n: number) => Promise<void>): Promise<number> {
  const deadline = performance.now() + ROUND_MS;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      while (performance.now() < deadline) await once(client, done++);
    }),
  );
  return done / ((performance.now() - started) / 1_000);
}

async function main() {
  await withBenchSchema(url, CLIENTS, async (db) => {
    await db.exec(`
      CREATE TABLE bench_ceilings (tenant_id text PRIMARY KEY, ceiling integer NOT NULL);
      CREATE TABLE bench_raw_guard (tenant_id text PRIMARY KEY, undelivered integer NOT NULL);`);
    const tenants = Array.from({ length: CLIENTS }, (_, i) => `tenant-${i}`);
    for (const tenantId of [...tenants, 'solo']) {
      await db.query('INSERT INTO bench_ceilings VALUES ($1, $2)', [tenantId, CEILING]);
      await db.query('INSERT INTO bench_raw_guard VALUES ($1, 0)', [tenantId]);
    }
    const backlog = createDatabaseCommandBacklog(db, { ceilings: benchCeilings, commandTtlMs: 3_600_000, now: () => new Date() });
    const actor = { id: 'bench' };
    let sequence = 0;
    const enqueue = async (tenantId: string) => {
      const outcome = await backlog.enqueue(actor, { tenantId, commandId: `c-${sequence++}`, deviceId: 'device-1', payload: { action: 'unlock' } });
      if (outcome.status !== 'accepted') throw new Error(`bench enqueue not accepted: ${JSON.stringify(outcome)}`);
    };
    const rawUpdate = async (tenantId: string) => {
      const { rowCount } = await db.query(
        'UPDATE bench_raw_guard SET undelivered = undelivered + 1 WHERE tenant_id = $1 AND undelivered < $2 RETURNING undelivered',
        [tenantId, CEILING],
      );
      if (rowCount !== 1) throw new Error('bench raw update refused');
    };

    // Warm connections and plans on both paths.
    await rate(() => enqueue('solo'));
    await rate(() => rawUpdate('solo'));

    const ours: number[] = [];
    const baseline: number[] = [];
    const spreadOurs: number[] = [];
    const spreadBaseline: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order so neither side always runs second (on a bigger table, a warmer cache).
      const pair = [
        async () => ours.push(await rate(() => enqueue('solo'))),
        async () => baseline.push(await rate(() => rawUpdate('solo'))),
      ];
      for (const run of round % 2 === 0 ? pair : pair.reverse()) await run();
      const spreadPair = [
        async () => spreadOurs.push(await rate((client) => enqueue(tenants[client]!))),
        async () => spreadBaseline.push(await rate((client) => rawUpdate(tenants[client]!))),
      ];
      for (const run of round % 2 === 0 ? spreadPair : spreadPair.reverse()) await run();
    }
    const best = { ours: median(ours), baseline: median(baseline) };
    const spread = { ours: median(spreadOurs), baseline: median(spreadBaseline) };
    const ratios = (a: number[], b: number[]) => a.map((each, i) => Number((each / b[i]!).toFixed(2)));
    console.log(`one tenant, per round (ours / raw UPDATE): ${ratios(ours, baseline).join(' ')}`);
    console.log(`16 tenants, per round (ours / raw UPDATE): ${ratios(spreadOurs, spreadBaseline).join(' ')}`);
    console.log(`one tenant: ours ${Math.round(best.ours)} enqueues/s, raw UPDATE ${Math.round(best.baseline)}/s`);
    console.log(`16 tenants: ours ${Math.round(spread.ours)} enqueues/s, raw UPDATE ${Math.round(spread.baseline)}/s`);
    console.log(
      JSON.stringify({
        bench: 'command-enqueue',
        ours: Math.round(best.ours),
        baseline: Math.round(best.baseline),
        ratio: Number((best.ours / best.baseline).toFixed(3)),
        unit: 'enqueues/s',
        clients: CLIENTS,
        tenants: 1,
        spreadOverTenants: { tenants: CLIENTS, ours: Math.round(spread.ours), baseline: Math.round(spread.baseline), ratio: Number((spread.ours / spread.baseline).toFixed(3)) },
      }),
    );
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

await main();
