// The vocabulary of the undelivered-command ceiling: what callers send, what they get back, and the
// ports this part needs. Expected outcomes are values; only faults (storage down) throw.
import type { Queryable } from '../db/db.ts';
import type { LimitSourceLevel } from '../governance/index.ts';
import type { CommandRejectionReason, CommandSettlement } from '../ledger/index.ts';

/** Who asked: recorded on every event as `actor` (and `actorRole` when known, as the control plane does). */
export interface BacklogActor {
  id: string;
  role?: string;
}

export interface EnqueueCommandInput {
  tenantId: string;
  commandId: string;
  deviceId: string;
  /** Any JSON value (already parsed), at most 64 KiB once serialised. */
  payload: unknown;
}

export interface CommandRef {
  tenantId: string;
  commandId: string;
}

export type InputField = 'tenantId' | 'commandId' | 'deviceId' | 'payload' | 'reason' | 'error';

/** Bad input: nothing was appended. */
export interface InvalidCommandInput {
  status: 'invalid';
  field: InputField;
  message: string;
}

export interface CommandAccepted {
  status: 'accepted';
  commandId: string;
  /** The backlog right after this command joined it (this command included). */
  undelivered: number;
  ceiling: number;
}

export interface CommandRejected {
  status: 'rejected';
  commandId: string;
  reason: CommandRejectionReason;
  /** CEILING_REACHED: true (enqueue the same commandId again later). UNKNOWN_TENANT: false. */
  retryable: boolean;
  /** Whole seconds, at least 1, when retryable; null for UNKNOWN_TENANT. */
  retryAfterSeconds: number | null;
  undelivered: number;
  /** null for UNKNOWN_TENANT: an unknown tenant has no ceiling. */
  ceiling: number | null;
}

/**
 * The commandId was accepted before with other content (another device or payload): a commandId is an
 * idempotency key, not a slot name. Nothing was queued or recorded.
 */
export interface CommandIdConflict {
  status: 'conflict';
  commandId: string;
  message: string;
}

/** The commandId was accepted before, with the same content, and has left the backlog since: how it left. */
export interface CommandSettledBefore {
  status: 'settled-before';
  commandId: string;
  settledAs: CommandSettlement;
  message: string;
}

/** Where an accepted command is. */
export type AcceptedCommandStatus = 'queued' | CommandSettlement;

export type EnqueueOutcome = CommandAccepted | CommandRejected | CommandIdConflict | CommandSettledBefore | InvalidCommandInput;

/** A command left the backlog; `undelivered` is the backlog after it left. */
export interface CommandSettled {
  status: 'settled';
  commandId: string;
  undelivered: number;
}

/**
 * The command cannot be settled: no such command for the tenant, or it already left the backlog
 * (`settledAs` says how). Nothing was appended and the backlog is unchanged.
 */
export interface CommandNotSettled {
  status: 'failed';
  error:
    | { kind: 'UnknownCommand'; commandId: string; message: string }
    | { kind: 'CommandAlreadySettled'; commandId: string; settledAs: string; message: string };
}

export type SettleOutcome = CommandSettled | CommandNotSettled | InvalidCommandInput;

export interface ExpiryResult {
  expired: number;
}

export interface TenantCeiling {
  ceiling: number;
  source: LimitSourceLevel;
}

/**
 * Where a tenant's UNDELIVERED_COMMANDS ceiling comes from; null means the tenant does not exist.
 * Called with the database the backlog runs on: on PostgreSQL the database path reads on a connection of
 * the pool while its batch's transaction begins (a retried transaction reads inside it), elsewhere inside the
 * enqueue's transaction. It must only read committed state (nothing the enqueue itself writes).
 * The control plane's `resolveTenantLimit(q, tenantId, 'UNDELIVERED_COMMANDS')` is adapted to this.
 *
 * `many` (optional) reads several tenants' ceilings at once, in one query: the database path decides the
 * enqueues of several tenants in one transaction and reads all their ceilings through it when present
 * (otherwise it calls the one-tenant form per tenant). A tenant missing from the map is unknown.
 */
export interface CeilingSource {
  (q: Queryable, tenantId: string): Promise<TenantCeiling | null>;
  many?: (q: Queryable, tenantIds: readonly string[]) => Promise<ReadonlyMap<string, TenantCeiling | null>>;
}

export interface CommandBacklog {
  enqueue(actor: BacklogActor, input: EnqueueCommandInput): Promise<EnqueueOutcome>;
  markDelivered(actor: BacklogActor, command: CommandRef): Promise<SettleOutcome>;
  markFailed(actor: BacklogActor, command: CommandRef & { error?: string }): Promise<SettleOutcome>;
  cancel(actor: BacklogActor, command: CommandRef & { reason: string }): Promise<SettleOutcome>;
  /** Settles as expired every command queued longer than the TTL; run periodically. */
  expireOlderThanTtl(): Promise<ExpiryResult>;
}

/** A command older than this is expired: a stale actuation is worse than none (configurable per service). */
export const DEFAULT_COMMAND_TTL_MS = 60 * 60 * 1_000;

export interface BacklogOptions {
  ceilings: CeilingSource;
  commandTtlMs: number;
  now: () => Date;
}
