// Enqueues per second against the backlog ceiling on PostgreSQL, 16 concurrent clients, against the bare
// minimum that enforces a ceiling: a conditional UPDATE ... WHERE undelivered + n <= ceiling, in the same run.
// Ours adds the ceiling read, the command row (idempotency), the ledger event and a transaction around them,
// and commits concurrent enqueues together (group commit: createGroupBatcher with ENQUEUE_BATCH_LIMITS). The
// baseline gets the same batching: the same batcher and limits, each batch one UPDATE of every tenant in it,
// by the count of its enqueues (before, the baseline committed each enqueue alone, so the ratio compared
// batched with unbatched commits; that figure stays as `unbatched`). Each side's commits per second are
// reported beside its enqueues. Both sides hammer ONE tenant (one guard row): the worst case, every enqueue
// queues on the same row lock. A second figure spreads the same load over 16 tenants. Fresh schema, dropped at
// the end. Rounds of the three alternate, in a different order each round, and each figure is the median of
// its rounds, so a machine busy with other work weighs on them alike. BENCH_QUICK=1: short rounds, to prove
// it runs.
// Last line: JSON.
import type { Db, Queryable } from '../src/db/db.ts';
import type { CeilingSource } from '../src/command-backlog/types.ts';
import { createDatabaseCommandBacklog, ENQUEUE_BATCH_LIMITS } from '../src/command-backlog/postgres/createDatabaseCommandBacklog.ts';
import { createGroupBatcher, type KeyGroup } from '../src/command-backlog/keyedBatcher.ts';
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

/** Commits made by each side (transactions of ours, statements of the baselines). */
const commits = { ours: 0, batched: 0, unbatched: 0 };
type Side = keyof typeof commits;

interface Rate {
  perSecond: number;
  commitsPerSecond: number;
}

/** Runs CLIENTS concurrent loops of `once` for ROUND_MS; returns operations and `side`'s commits per second. */
async function rate(side: Side, once: (client: number, n: number) => Promise<void>): Promise<Rate> {
  const deadline = performance.now() + ROUND_MS;
  let done = 0;
  const commitsBefore = commits[side];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      while (performance.now() < deadline) await once(client, done++);
    }),
  );
  const seconds = (performance.now() - started) / 1_000;
  return { perSecond: done / seconds, commitsPerSecond: (commits[side] - commitsBefore) / seconds };
}

/** The Db with every transaction counted as one of ours' commits. */
function countingTransactions(db: Db): Db {
  return new Proxy(db, {
    get(target, property) {
      if (property === 'transaction') {
        return <T>(work: Parameters<Db['transaction']>[0]) => {
          commits.ours++;
          return target.transaction(work) as Promise<T>;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
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
    const backlog = createDatabaseCommandBacklog(countingTransactions(db), { ceilings: benchCeilings, commandTtlMs: 3_600_000, now: () => new Date() });
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
      commits.unbatched++;
    };
    // The bare UPDATE with ours' batching: the same batcher and limits; one statement per batch raises each of
    // its tenants' counts by that tenant's enqueues, where they fit under the ceiling.
    const batchedUpdate = createGroupBatcher<null, true>(
      async (groups: Array<KeyGroup<null>>) => {
        commits.batched++;
        const { rows } = await db.query<{ tenant_id: string }>(
          `UPDATE bench_raw_guard g SET undelivered = g.undelivered + d.n
             FROM (SELECT unnest($1::text[]) AS tenant_id, unnest($2::int[]) AS n) d
            WHERE g.tenant_id = d.tenant_id AND g.undelivered + d.n <= $3
           RETURNING g.tenant_id`,
          [groups.map((group) => group.key), groups.map((group) => group.items.length), CEILING],
        );
        const updated = new Set(rows.map((row) => row.tenant_id));
        return groups.map((group) =>
          updated.has(group.key)
            ? { status: 'fulfilled' as const, value: group.items.map(() => true as const) }
            : { status: 'rejected' as const, reason: new Error('bench batched update refused') },
        );
      },
      ENQUEUE_BATCH_LIMITS,
    );
    const batched = (tenantId: string) => batchedUpdate(tenantId, null).then(() => undefined);

    // Warm connections and plans on every path.
    await rate('ours', () => enqueue('solo'));
    await rate('batched', () => batched('solo'));
    await rate('unbatched', () => rawUpdate('solo'));

    const sides: Side[] = ['ours', 'batched', 'unbatched'];
    const oneTenant = { ours: [] as Rate[], batched: [] as Rate[], unbatched: [] as Rate[] };
    const spread = { ours: [] as Rate[], batched: [] as Rate[], unbatched: [] as Rate[] };
    const run = { ours: enqueue, batched, unbatched: rawUpdate };
    for (let round = 0; round < ROUNDS; round++) {
      // A different order each round, so no side always runs after the same one (on a bigger table, a warmer cache).
      const order = sides.map((_, i) => sides[(round + i) % sides.length]!);
      for (const side of order) oneTenant[side].push(await rate(side, () => run[side]('solo')));
      for (const side of order) spread[side].push(await rate(side, (client) => run[side](tenants[client]!)));
    }
    const medianOf = (rates: Rate[]) => ({ perSecond: median(rates.map((each) => each.perSecond)), commitsPerSecond: median(rates.map((each) => each.commitsPerSecond)) });
    const one = { ours: medianOf(oneTenant.ours), batched: medianOf(oneTenant.batched), unbatched: medianOf(oneTenant.unbatched) };
    const many = { ours: medianOf(spread.ours), batched: medianOf(spread.batched), unbatched: medianOf(spread.unbatched) };
    const ratios = (a: Rate[], b: Rate[]) => a.map((each, i) => Number((each.perSecond / b[i]!.perSecond).toFixed(2)));
    const ratio3 = (a: number, b: number) => Number((a / b).toFixed(3));
    console.log(`one tenant, per round (ours / batched UPDATE): ${ratios(oneTenant.ours, oneTenant.batched).join(' ')}`);
    console.log(`16 tenants, per round (ours / batched UPDATE): ${ratios(spread.ours, spread.batched).join(' ')}`);
    for (const [label, figures] of [['one tenant', one], ['16 tenants', many]] as const) {
      console.log(
        `${label}: ours ${Math.round(figures.ours.perSecond)} enqueues/s (${Math.round(figures.ours.commitsPerSecond)} commits/s), ` +
          `batched UPDATE ${Math.round(figures.batched.perSecond)}/s (${Math.round(figures.batched.commitsPerSecond)} commits/s), ` +
          `unbatched UPDATE ${Math.round(figures.unbatched.perSecond)}/s`,
      );
    }
    console.log(
      JSON.stringify({
        bench: 'command-enqueue',
        ours: Math.round(one.ours.perSecond),
        baseline: Math.round(one.batched.perSecond),
        ratio: ratio3(one.ours.perSecond, one.batched.perSecond),
        unit: 'enqueues/s',
        baselineIs: 'a bare minimum with the same batching: one conditional UPDATE of the guard row per batch of enqueues (the same group batcher and limits as ours)',
        generator: `${CLIENTS} concurrent clients in the bench's process (node-postgres), PostgreSQL shared, unpinned`,
        clients: CLIENTS,
        tenants: 1,
        commitsPerSecond: { ours: Math.round(one.ours.commitsPerSecond), baseline: Math.round(one.batched.commitsPerSecond) },
        unbatched: { enqueuesPerSecond: Math.round(one.unbatched.perSecond), ratio: ratio3(one.ours.perSecond, one.unbatched.perSecond) },
        spreadOverTenants: {
          tenants: CLIENTS,
          ours: Math.round(many.ours.perSecond),
          baseline: Math.round(many.batched.perSecond),
          ratio: ratio3(many.ours.perSecond, many.batched.perSecond),
          commitsPerSecond: { ours: Math.round(many.ours.commitsPerSecond), baseline: Math.round(many.batched.commitsPerSecond) },
          unbatched: { enqueuesPerSecond: Math.round(many.unbatched.perSecond), ratio: ratio3(many.ours.perSecond, many.unbatched.perSecond) },
        },
        rounds: ROUNDS,
        quick: QUICK,
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
