// The read routing against scripted stand-ins for the primary and the replica: which database a stale read goes
// to, the staleness bound it reports, read-your-writes, and the replica's faults.
import { afterEach, describe, expect, it } from 'vitest';
import type { QueryResult } from '../../../src/db/index.ts';
import { createReadRouting, PROBE_TIMEOUT_MS, type ReadRouting, type ReadSourceRecord } from '../../../src/read-replica/index.ts';
import { waitFor } from '../../support/waitFor.ts';

interface Fake {
  queries: string[];
  query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

function fake(answer: (sql: string, params?: readonly unknown[]) => Record<string, unknown>): Fake {
  const queries: string[] = [];
  return {
    queries,
    query: async <Row>(sql: string, params?: readonly unknown[]) => {
      queries.push(sql);
      return { rows: [answer(sql, params) as Row], rowCount: 1 };
    },
    exec: async () => {},
    close: async () => {},
  };
}

const record = (): ReadSourceRecord => ({ replicaReads: 0, stalenessSeconds: 0 });
const probes = (db: Fake) => db.queries.filter((sql) => sql.includes('pg_is_in_recovery')).length;

describe('createReadRouting', () => {
  let routing: ReadRouting | undefined;
  afterEach(async () => {
    await routing?.close();
  });

  const setUp = (replica: { recovery?: boolean; caughtUp?: () => boolean; fails?: () => boolean } = {}) => {
    const primary = fake((sql) => (sql.includes('pg_current_wal_insert_lsn') ? { lsn: '0/100' } : { from: 'primary' }));
    const standby = fake((sql) => {
      if (replica.fails?.()) throw new Error('connection refused');
      return sql.includes('pg_is_in_recovery')
        ? { recovery: replica.recovery ?? true, caught_up: replica.caughtUp?.() ?? true, behind: replica.caughtUp?.() === false ? '4096' : '0' }
        : { from: 'replica' };
    });
    routing = createReadRouting({ primary, replica: standby, maxStalenessSeconds: 5, probeIntervalMs: 10 });
    return { primary, standby, routing };
  };

  it('a caught-up replica answers stale reads and says how stale they may be', async () => {
    const { standby, routing } = setUp();
    await waitFor(() => routing.state().usable, { description: 'the first probe' });
    const source = record();
    const { rows } = await routing.staleReads('reader', source).query<{ from: string }>('SELECT 1');
    expect(rows[0]!.from).toBe('replica');
    expect(source.replicaReads).toBe(1);
    expect(source.stalenessSeconds).toBeGreaterThanOrEqual(0);
    expect(source.stalenessSeconds).toBeLessThan(5);
    expect(standby.queries.at(-1)).toBe('SELECT 1');
  });

  it('a writer reads the primary until a probe after its write finds the replica caught up', async () => {
    let caughtUp = true;
    const { routing } = setUp({ caughtUp: () => caughtUp });
    await waitFor(() => routing.state().usable, { description: 'the first probe' });
    caughtUp = false;
    routing.wrote('writer');
    const mine = record();
    expect((await routing.staleReads('writer', mine).query<{ from: string }>('SELECT 1')).rows[0]!.from).toBe('primary');
    expect(mine.replicaReads).toBe(0);
    // Another caller may still read the replica, within the bound.
    expect((await routing.staleReads('other', record()).query<{ from: string }>('SELECT 1')).rows[0]!.from).toBe('replica');
    caughtUp = true;
    await waitFor(async () => (await routing.staleReads('writer', record()).query<{ from: string }>('SELECT 1')).rows[0]!.from === 'replica', {
      description: 'the writer back on the replica once it caught up',
    });
  });

  it('a replica that fails a read is answered for by the primary and left until a probe succeeds', async () => {
    let fails = false;
    const { routing, standby } = setUp({ fails: () => fails });
    await waitFor(() => routing.state().usable, { description: 'the first probe' });
    fails = true;
    const source = record();
    expect((await routing.staleReads('reader', source).query<{ from: string }>('SELECT 1')).rows[0]!.from).toBe('primary');
    expect(source.replicaReads).toBe(0);
    expect(routing.state().usable).toBe(false);
    fails = false;
    const before = probes(standby);
    await waitFor(() => probes(standby) > before && routing.state().usable, { description: 'a successful probe' });
  });

  it('never reads a replica that is not in recovery (promoted)', async () => {
    const { routing, standby } = setUp({ recovery: false });
    await waitFor(() => probes(standby) >= 2, { description: 'two probes' });
    expect(routing.state()).toMatchObject({ usable: false, reason: expect.stringContaining('not in recovery') });
    expect((await routing.staleReads('reader', record()).query<{ from: string }>('SELECT 1')).rows[0]!.from).toBe('primary');
  });
});

describe('createReadRouting with a replica that stops answering', () => {
  it('takes the replica out of use once a probe has waited PROBE_TIMEOUT_MS', async () => {
    let hang = false;
    const primary = fake((sql) => (sql.includes('pg_current_wal_insert_lsn') ? { lsn: '0/100' } : { from: 'primary' }));
    const standby: Fake = {
      ...fake(() => ({})),
      query: async <Row>(sql: string) => {
        if (hang) return new Promise<QueryResult<Row>>(() => {});
        const row = sql.includes('pg_is_in_recovery') ? { recovery: true, caught_up: true, behind: '0' } : { from: 'replica' };
        return { rows: [row as Row], rowCount: 1 };
      },
    };
    const routing = createReadRouting({ primary, replica: standby, maxStalenessSeconds: 60, probeIntervalMs: 10 });
    await waitFor(() => routing.state().usable, { description: 'the first probe' });
    hang = true;
    await waitFor(() => !routing.state().usable, { timeoutMs: PROBE_TIMEOUT_MS + 2_000, description: 'the hanging probe noticed' });
    expect(routing.state().reason).toContain('has not answered');
    expect((await routing.staleReads('reader', record()).query<{ from: string }>('SELECT 1')).rows[0]!.from).toBe('primary');
    // close() does not wait for the probe under way, which never ends here, longer than PROBE_TIMEOUT_MS each step.
    const closing = Date.now();
    await routing.close();
    expect(Date.now() - closing).toBeLessThan(3 * PROBE_TIMEOUT_MS + 1_000);
  });
});
