// Statements marked with `prepared` are sent to PostgreSQL as named statements: parsed once per connection
// and, after a few runs, planned once, instead of on every call. Checked on the server's own list of the
// connection's prepared statements; PGlite ignores the mark and runs the statement as it is.
import { expect, it } from 'vitest';
import { prepared, preparedName } from '../../../src/db/preparedStatements.ts';
import { describeOnEachStorage } from '../../support/databases.ts';

const MARKED = prepared('SELECT $1::integer + 1 AS next');
const PLAIN = 'SELECT $1::integer + 2 AS next';

describeOnEachStorage('prepared statements on $name', (target) => {
  it('runs a marked statement like any other, prepared once per connection on PostgreSQL', async () => {
    const { db, dispose } = await target.open({ migrate: false, max: 1 });
    try {
      const name = preparedName(MARKED)!;
      expect(name).toBeDefined();
      expect(preparedName(PLAIN)).toBeUndefined();
      for (const n of [1, 2, 3]) expect((await db.query<{ next: number }>(MARKED, [n])).rows).toEqual([{ next: n + 1 }]);
      await db.transaction(async (tx) => {
        expect((await tx.query<{ next: number }>(MARKED, [41])).rows).toEqual([{ next: 42 }]);
        expect((await tx.query<{ next: number }>(PLAIN, [40])).rows).toEqual([{ next: 42 }]);
      });
      // One connection: every call above ran on it.
      const { rows } = await db.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements ORDER BY name');
      if (target.name === 'postgres') expect(rows).toEqual([{ name, statement: MARKED }]);
      else expect(rows).toEqual([]);
    } finally {
      await dispose();
    }
  });

  it('names each statement text once, and the same text by the same name', () => {
    expect(prepared(MARKED)).toBe(MARKED);
    expect(preparedName(prepared(` ${MARKED}`))).not.toBe(preparedName(MARKED));
    expect(preparedName(MARKED)).toBe(preparedName(prepared(MARKED)));
  });
});
