// The database's surface: one Db interface over PostgreSQL and PGlite, opening and migrating it, and how a
// storage fault is told apart from a refusal.
export * from './db.ts';
export * from './open.ts';
export * from './migrate.ts';
export * from './openStorage.ts';
export * from './storageUnavailable.ts';
export * from './periodicPrune.ts';
