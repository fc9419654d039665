// What every resolver sees: who is asking (from the verified token) and the parts of the service it reads
// and commands. A fresh context per request also scopes the dataloaders' caches to that request.
import type { Caller, ControlPlane } from '../control-plane/index.ts';
import type { Db, Queryable } from '../db/db.ts';
import type { EventStore } from '../ledger/index.ts';
import type { CommandBacklog } from '../command-backlog/index.ts';
import type { ApiPubSub } from './pubsub.ts';
import type { EffectiveLimitsCache } from './effectiveLimitsCache.ts';
import type { ReadRouting, ReadSourceRecord } from '../read-replica/index.ts';

export interface ApiDependencies {
  /** Read models; every read query goes through here (tests wrap it to count statements). */
  db: Queryable;
  store: EventStore;
  controlPlane: ControlPlane;
  commandBacklog: CommandBacklog;
  pubsub: ApiPubSub;
  /** Where reads that may be a little stale go (DATABASE_READ_URL); absent: every read on `db`. */
  reads?: ReadRouting;
  /** Webhook registration (a transaction on the database); without it registerWebhook answers unavailable. */
  webhookDb?: Db;
}

export interface ApiContext extends ApiDependencies {
  actor: Caller;
  /** Shared by every request of one server. */
  effectiveLimits: EffectiveLimitsCache;
  /** What this request read from the replica, and whether it is a mutation (set by useReadReplica). */
  readSource: ReadSourceRecord & { mutation: boolean };
}

/**
 * The Queryable for a read that may be a little stale (trends, history, command lists): the replica when the
 * routing allows it for this caller, the primary in a mutation or without DATABASE_READ_URL.
 */
export function staleDb(context: ApiContext): Queryable {
  if (!context.reads || context.readSource.mutation) return context.db;
  return context.reads.staleReads(context.actor.id, context.readSource);
}
