import { describe, expect, it } from 'vitest';
import { describeOnEachStorage, storageTargets } from '../../support/databases.ts';
import { migrate, loadMigrations } from '../../../src/db/migrate.ts';

describeOnEachStorage('migrations on $name', (target) => {
  it('applies each migration once and records it', async () => {
    const { db, dispose } = await target.open({ migrate: false });
    try {
      const all = await loadMigrations();
      expect(await migrate(db)).toEqual(all.map((m) => m.name));
      expect(await migrate(db)).toEqual([]);
      const recorded = await db.query<{ version: number }>('SELECT version FROM gl_migrations ORDER BY version');
      expect(recorded.rows.map((row) => row.version)).toEqual(all.map((m) => m.version));
    } finally {
      await dispose();
    }
  });

  it('returns int8 and xid8 as bigint', async () => {
    const { db, dispose } = await target.open();
    try {
      const { rows } = await db.query<{ big: unknown; xid: unknown }>(
        'SELECT 9007199254740993::int8 AS big, pg_current_xact_id() AS xid',
      );
      expect(rows[0]!.big).toBe(9007199254740993n);
      expect(typeof rows[0]!.xid).toBe('bigint');
    } finally {
      await dispose();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('migrations racing on PostgreSQL', () => {
  it('two pools migrating at once apply each migration exactly once', async () => {
    const target = storageTargets.find((t) => t.name === 'postgres')!;
    const { db, connectAgain, dispose } = await target.open({ migrate: false });
    try {
      const other = connectAgain!();
      const [a, b] = await Promise.all([migrate(db), migrate(other)]);
      const all = await loadMigrations();
      expect([...a, ...b].sort()).toEqual(all.map((m) => m.name).sort());
    } finally {
      await dispose();
    }
  });
});
