// The guarantee: across processes the ceiling is never exceeded. Two OS processes, 32 concurrent enqueuers
// each, one tenant with a ceiling of 50, 200 distinct commands, on the machine's PostgreSQL.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import { createCommandBacklog } from '../../../src/command-backlog/createCommandBacklog.ts';
import type { EnqueueOutcome } from '../../../src/command-backlog/types.ts';
import { postgresOnly, type TestDb } from '../../support/databases.ts';
import { createCeilingTable, setCeiling, tableCeilings } from './ceilingTable.ts';

// Opening a migrated database (PGlite above all) is the slow step on a busy two-core machine.
const OPEN_TIMEOUT_MS = 180_000;

const TENANT = 'acme';
const CEILING = 50;
const WORKER = fileURLToPath(new URL('./enqueueWorker.ts', import.meta.url));

if (!postgresOnly) console.warn('DATABASE_URL is not set: the two-process command ceiling test is skipped.');

interface Worker {
  child: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  output: Interface;
}

async function nextLine(worker: Worker): Promise<unknown> {
  const next = await worker.lines.next();
  if (next.done) throw new Error(`worker ${worker.child.pid} ended early (exit ${worker.child.exitCode})`);
  return JSON.parse(next.value);
}

type Ledger = 'database' | 'stream';

function startWorker(env: Record<string, string>, ledger: Ledger): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, ...env, COMMANDS_TENANT: TENANT, COMMANDS_LEDGER: ledger },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  const output = createInterface({ input: child.stdout });
  return { child, output, lines: output[Symbol.asyncIterator]() };
}

// 'database': guard row + ledger event in one transaction. 'stream': the tenant's stream appended at an
// expected revision (the EVENTSTORE_URL path), here through the PostgreSQL adapter of the same port.
describe.skipIf(!postgresOnly).each<Ledger>(['database', 'stream'])('command ceiling across two processes on PostgreSQL, %s path', (ledger) => {
  let testDb: TestDb;
  let workers: Worker[];

  beforeAll(async () => {
    testDb = await postgresOnly!.open();
    await createCeilingTable(testDb.db);
    await setCeiling(testDb.db, TENANT, CEILING);
    workers = [startWorker(testDb.env!, ledger), startWorker(testDb.env!, ledger)];
    for (const worker of workers) expect(await nextLine(worker)).toEqual({ ready: true });
  }, OPEN_TIMEOUT_MS);

  afterAll(async () => {
    for (const worker of workers ?? []) {
      worker.child.stdin.end();
      if (worker.child.exitCode === null) await new Promise((resolve) => worker.child.once('exit', resolve));
    }
    await testDb?.dispose();
  });

  /** Sends one line to each process at once and calls `sample` again and again until both have answered. */
  async function raceWorkers(lines: [object, object], sample: () => Promise<void>): Promise<{ outcomes: EnqueueOutcome[][]; samples: number }> {
    let finished = false;
    const answers = Promise.all(
      workers.map(async (worker, i) => {
        worker.child.stdin.write(`${JSON.stringify(lines[i])}\n`);
        return ((await nextLine(worker)) as { outcomes: EnqueueOutcome[] }).outcomes;
      }),
    ).finally(() => (finished = true));
    let samples = 0;
    while (!finished) {
      await sample();
      samples++;
    }
    return { outcomes: await answers, samples };
  }

  /** Runs one round in both processes at once, sampling the backlog until both have answered. */
  async function race(commandIds: [string[], string[]]) {
    let highestSeen = 0;
    const { outcomes, samples } = await raceWorkers([{ commandIds: commandIds[0] }, { commandIds: commandIds[1] }], async () => {
      // Three views of the backlog, each committed state: the guard row and the queued command rows (database
      // path), and the ledger's own running count (both paths).
      const { rows } = await testDb.db.query<{ guard: number | null; queued: bigint; ledger: bigint }>(
        `SELECT (SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1) AS guard,
                (SELECT count(*) FROM gl_commands WHERE tenant_id = $1 AND status = 'queued') AS queued,
                (SELECT count(*) FILTER (WHERE type = 'CommandEnqueued') - count(*) FILTER (WHERE type <> 'CommandEnqueued' AND type <> 'CommandRejected')
                   FROM gl_events WHERE stream = $2) AS ledger`,
        [TENANT, commandsStream(TENANT)],
      );
      highestSeen = Math.max(highestSeen, rows[0]!.guard ?? 0, Number(rows[0]!.queued), Number(rows[0]!.ledger));
    });
    return { outcomes: outcomes.flat(), samples, highestSeen };
  }

  /** Sends one line to each process at once and samples, until both answer, how far any tenant got past its ceiling. */
  async function raceCommands(lines: [Array<{ tenantId: string; commandId: string; deviceId?: string; payload?: unknown }>, Array<{ tenantId: string; commandId: string; deviceId?: string; payload?: unknown }>]) {
    let mostOver = Number.NEGATIVE_INFINITY;
    const tenantIds = [...new Set(lines.flat().map((command) => command.tenantId))];
    const { outcomes, samples } = await raceWorkers([{ commands: lines[0] }, { commands: lines[1] }], async () => {
      const { rows } = await testDb.db.query<{ over: number | null }>(
        `SELECT max(greatest(coalesce(g.undelivered, 0), coalesce(q.queued, 0)) - c.ceiling) AS over
         FROM test_command_ceilings c
         LEFT JOIN gl_command_backlog_guard g ON g.tenant_id = c.tenant_id
         LEFT JOIN (SELECT tenant_id, count(*)::integer AS queued FROM gl_commands WHERE status = 'queued' GROUP BY tenant_id) q ON q.tenant_id = c.tenant_id
         WHERE c.tenant_id = ANY($1::text[])`,
        [tenantIds],
      );
      mostOver = Math.max(mostOver, rows[0]!.over ?? Number.NEGATIVE_INFINITY);
    });
    return { outcomes, samples, mostOver };
  }

  it('holds every tenant to its own ceiling when both processes enqueue for many tenants at once', async () => {
    const tenants = Array.from({ length: 8 }, (_, t) => ({ tenantId: `many-${t}`, ceiling: 5 + t }));
    for (const { tenantId, ceiling } of tenants) await setCeiling(testDb.db, tenantId, ceiling);
    // Both processes send every command, round robin over the tenants, in opposite orders.
    const commands = Array.from({ length: 20 }, (_, n) => tenants.map(({ tenantId }) => ({ tenantId, commandId: `m-${n}` }))).flat();
    const round = await raceCommands([commands, [...commands].reverse()]);
    expect(round.samples).toBeGreaterThan(0);
    expect(round.mostOver).toBeLessThanOrEqual(0);

    const store = createPostgresEventStore(testDb.db);
    for (const { tenantId, ceiling } of tenants) {
      const answers = round.outcomes.flatMap((outcomes, p) => outcomes.filter((_, i) => (p === 0 ? commands : [...commands].reverse())[i]!.tenantId === tenantId));
      const accepted = new Map<string, EnqueueOutcome[]>();
      for (const answer of answers) if (answer.status === 'accepted') accepted.set(answer.commandId, [...(accepted.get(answer.commandId) ?? []), answer]);
      expect(accepted.size).toBe(ceiling);
      // An id both processes sent took one slot: whoever came second got the first acceptance again.
      for (const [, same] of accepted) for (const answer of same) expect(answer).toEqual(same[0]);
      expect([...accepted.values()].map(([answer]) => (answer as { undelivered: number }).undelivered).sort((a, b) => a - b)).toEqual(
        Array.from({ length: ceiling }, (_, i) => i + 1),
      );
      expect(answers.filter((answer) => answer.status === 'rejected').every((answer) => answer.status === 'rejected' && answer.reason === 'CEILING_REACHED')).toBe(true);
      let running = 0;
      for (const event of await store.readStream(commandsStream(tenantId))) {
        if (event.type === 'CommandEnqueued') running++;
        else if (event.type !== 'CommandRejected') running--;
        expect(running).toBeLessThanOrEqual(ceiling);
      }
      expect(running).toBe(ceiling);
      if (ledger === 'database') {
        const guard = await testDb.db.query<{ undelivered: number }>('SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1', [tenantId]);
        expect(guard.rows[0]!.undelivered).toBe(ceiling);
      }
    }
    await store.close();
  });

  it('accepts one commandId once across both processes: the same id with other content is a CommandIdConflict', async () => {
    const tenantId = 'reused-id';
    await setCeiling(testDb.db, tenantId, 100);
    const sends = (p: number) => Array.from({ length: 20 }, (_, i) => ({ tenantId, commandId: 'one-id', deviceId: `p${p}-device-${i}`, payload: { n: p * 100 + i } }));
    const round = await raceCommands([sends(0), sends(1)]);
    const answers = round.outcomes.flat();
    expect(answers).toHaveLength(40);
    expect(answers.filter((answer) => answer.status === 'accepted')).toEqual([{ status: 'accepted', commandId: 'one-id', undelivered: 1, ceiling: 100 }]);
    expect(answers.filter((answer) => answer.status === 'conflict')).toHaveLength(39);
    const store = createPostgresEventStore(testDb.db);
    const events = await store.readStream(commandsStream(tenantId));
    await store.close();
    expect(events.map((event) => event.type)).toEqual(['CommandEnqueued']);
    // What was stored is what the one accepted call sent.
    const winner = [...sends(0), ...sends(1)].find((send) => (events[0]!.data as { deviceId: string }).deviceId === send.deviceId)!;
    expect(events[0]!.data).toMatchObject({ commandId: 'one-id', deviceId: winner.deviceId, payload: winner.payload });
  });

  it('accepts exactly the ceiling, refuses the rest retryably, and frees exactly what was delivered', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `cmd-${i}`);
    const first = await race([ids.slice(0, 100), ids.slice(100)]);

    const accepted = first.outcomes.filter((outcome) => outcome.status === 'accepted');
    const rejected = first.outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(accepted).toHaveLength(CEILING);
    expect(rejected).toHaveLength(150);
    expect(rejected.every((outcome) => outcome.reason === 'CEILING_REACHED' && outcome.retryable && outcome.retryAfterSeconds! >= 1)).toBe(true);
    expect(first.samples).toBeGreaterThan(0);
    expect(first.highestSeen).toBeLessThanOrEqual(CEILING);
    // Each acceptance saw a distinct count from 1 to 50: no two processes ever shared a slot.
    expect(accepted.map((outcome) => outcome.undelivered).sort((a, b) => a - b)).toEqual(Array.from({ length: CEILING }, (_, i) => i + 1));

    const store = createPostgresEventStore(testDb.db);
    const here = createCommandBacklog({ db: testDb.db, store, ceilings: tableCeilings, ledger });
    for (const outcome of accepted.slice(0, 10)) {
      expect(await here.markDelivered({ id: 'svc:delivery' }, { tenantId: TENANT, commandId: outcome.commandId })).toMatchObject({ status: 'settled' });
    }

    // Callers retry what was refused, with the same commandIds, from both processes at once.
    const refusedIds = rejected.map((outcome) => outcome.commandId);
    const second = await race([refusedIds.slice(0, 75), refusedIds.slice(75)]);
    expect(second.outcomes.filter((outcome) => outcome.status === 'accepted')).toHaveLength(10);
    expect(second.outcomes.filter((outcome) => outcome.status === 'rejected')).toHaveLength(140);
    expect(second.highestSeen).toBeLessThanOrEqual(CEILING);

    // The ledger, in the stream's order, never counts more than the ceiling, and every event's count is the
    // running count at that point.
    const events = await store.readStream(commandsStream(TENANT));
    await store.close();
    let running = 0;
    let highest = 0;
    for (const event of events) {
      if (event.type === 'CommandEnqueued') running++;
      else if (event.type !== 'CommandRejected') running--;
      highest = Math.max(highest, running);
      expect((event.data as { undelivered: number }).undelivered).toBe(event.type === 'CommandRejected' ? CEILING : running);
    }
    expect(highest).toBe(CEILING);
    expect(running).toBe(CEILING);
    expect(events.filter((event) => event.type === 'CommandEnqueued')).toHaveLength(60);
    expect(events.filter((event) => event.type === 'CommandRejected')).toHaveLength(290);
    expect(events.filter((event) => event.type === 'CommandDelivered')).toHaveLength(10);
  });

  it('counts a commandId once when both processes enqueue it at the same moment', async () => {
    const queued = await testDb.db.query<{ n: number }>('SELECT undelivered AS n FROM gl_command_backlog_guard WHERE tenant_id = $1', [TENANT]);
    const store = createPostgresEventStore(testDb.db);
    const here = createCommandBacklog({ db: testDb.db, store, ceilings: tableCeilings, ledger });
    // Continues from the backlog of 50 the previous test leaves; delivering 20 of them makes room for 20.
    const stillQueued = new Set<string>();
    for (const event of await store.readStream(commandsStream(TENANT))) {
      const { commandId } = event.data as { commandId: string };
      if (event.type === 'CommandEnqueued') stillQueued.add(commandId);
      else if (event.type !== 'CommandRejected') stillQueued.delete(commandId);
    }
    expect(stillQueued.size).toBe(CEILING);
    expect(queued.rows[0]?.n ?? CEILING).toBe(CEILING);
    for (const commandId of [...stillQueued].slice(0, 20)) {
      expect(await here.markDelivered({ id: 'svc:delivery' }, { tenantId: TENANT, commandId })).toMatchObject({ status: 'settled' });
    }
    const sameIds = Array.from({ length: 30 }, (_, i) => `twice-${i}`);
    const round = await race([sameIds, sameIds]);
    expect(round.highestSeen).toBeLessThanOrEqual(CEILING);
    const byId = new Map<string, EnqueueOutcome[]>();
    for (const outcome of round.outcomes) if (outcome.status !== 'invalid') byId.set(outcome.commandId, [...(byId.get(outcome.commandId) ?? []), outcome]);
    const acceptedIds = [...byId].filter(([, answers]) => answers.some((answer) => answer.status === 'accepted'));
    expect(acceptedIds).toHaveLength(20);
    // An id accepted in one process is answered the same in the other: it took one slot, not two.
    for (const [, answers] of acceptedIds) expect(answers[1]).toEqual(answers[0]);
    const enqueued = (await store.readStream(commandsStream(TENANT))).filter((event) => event.type === 'CommandEnqueued');
    await store.close();
    expect(enqueued.filter((event) => (event.data as { commandId: string }).commandId.startsWith('twice-'))).toHaveLength(20);
  });
});
