import { createDatabaseCommandBacklog } from '../../../src/command-backlog/postgres/createDatabaseCommandBacklog.ts';
import { describeCommandBacklog } from './commandBacklog.behaviour.ts';

describeCommandBacklog('command backlog in the database ledger', ({ db, ceilings, commandTtlMs, now }) =>
  createDatabaseCommandBacklog(db, { ceilings, commandTtlMs, now }),
);
