// The control plane's command side: one method per command, each taking the caller's identity and an input,
// appending exactly one event or nothing. Decisions are optimistic: the target stream is read, the decision
// appended at the revision that was read, and when another edit got in first (WrongExpectedRevision) the
// command decides again on the fresh state. Retrying the decision, not the stale event, is what keeps a
// concurrent edit from being lost: the retried event's `previous` is the value the winner just wrote.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/db.ts';
import { WrongExpectedRevision, type EventStore, type ExpectedRevision, type RecordedEvent } from '../ledger/index.ts';
import type { Caller, ControlPlaneCommand } from './controlPlaneCommand.ts';
import { authorize, controlPlaneError, type ControlPlaneResult } from './controlPlaneCommand.ts';
import { setBrandingDefault, setPlatformDefault } from './platformCommands.ts';
import {
  assignTenantModel,
  assignTenantTier,
  clearTenantOverride,
  registerTenant,
  setTenantBranding,
  setTenantOverLimitPolicy,
  setTenantOverride,
} from './tenantCommands.ts';
import { clearTierLimit, defineTier, setTierDefaultModel, setTierLimit } from './tierCommands.ts';
import { promoteShadowLimit } from './shadowLimits.ts';
import { isControlPlaneError } from './validation.ts';
import {
  createLimitChangeRequests,
  LIMIT_CHANGE_COMMANDS,
  type FromRequest,
  type LimitChangeDecisions,
  type LimitChangeInput,
  type LimitChangeResult,
} from './change-requests/runRequests.ts';
import type { LimitChangeCommand } from '../ledger/index.ts';
import { occurredAt, viewOf } from './view.ts';

/** What the control plane tells the Governor: a registered tenant's name is confirmed. */
export interface TenantNameConfirmer {
  confirmTenant(tenantId: string): void;
}

export interface ControlPlaneOptions {
  db: Db;
  store: EventStore;
  governor?: TenantNameConfirmer;
  now?: () => Date;
  /** Decisions tried before a command reports ConcurrentEdit. */
  maxAttempts?: number;
}

export const CONTROL_PLANE_COMMANDS = {
  setPlatformDefault,
  setBrandingDefault,
  defineTier,
  setTierLimit,
  clearTierLimit,
  setTierDefaultModel,
  registerTenant,
  assignTenantTier,
  setTenantOverride,
  clearTenantOverride,
  promoteShadowLimit,
  assignTenantModel,
  setTenantBranding,
  setTenantOverLimitPolicy,
};

type Commands = typeof CONTROL_PLANE_COMMANDS;
type InputOf<Definition> = Definition extends ControlPlaneCommand<infer Input> ? Input : never;

/**
 * Every command; the limit commands take `effectiveFrom` and may answer a request (scheduled, or waiting for a
 * second operator) instead of applying at once (change-requests/).
 */
export type ControlPlane = {
  [Name in Exclude<keyof Commands, LimitChangeCommand>]: (actor: Caller, input: InputOf<Commands[Name]>) => Promise<ControlPlaneResult>;
} & {
  [Name in LimitChangeCommand]: (actor: Caller, input: InputOf<Commands[Name]> & { effectiveFrom?: Date | string | null }) => Promise<LimitChangeResult>;
} & LimitChangeDecisions;

export function createControlPlane({ store, governor, now = () => new Date(), maxAttempts = 50 }: ControlPlaneOptions): ControlPlane {
  async function run<Input>(definition: ControlPlaneCommand<Input>, actor: Caller, input: Input, fromRequest?: FromRequest): Promise<ControlPlaneResult> {
    const plan = definition.plan(input);
    if (isControlPlaneError(plan)) return { status: 'failed', error: plan };
    const forbidden = authorize(actor, definition as ControlPlaneCommand<never>, plan);
    if (forbidden) return { status: 'failed', error: forbidden };

    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const streams = new Map<string, RecordedEvent[]>();
      await Promise.all([plan.target, ...plan.reads].map(async (stream) => streams.set(stream, await store.readStream(stream))));
      const target = streams.get(plan.target)!;
      const last = target.at(-1);
      // A request's change is appended once, whichever replica's timer got there first.
      const already = fromRequest && target.find((event) => event.metadata.changeId === fromRequest.changeId);
      if (already) return { status: 'applied', position: already.position };
      // occurredAt never goes back within a stream, so time travel can fold each stream as a prefix.
      const decidedAt = new Date(Math.max((fromRequest?.at ?? now()).getTime(), last ? occurredAt(last).getTime() : 0));
      const decided = definition.decide(input, viewOf(streams), decidedAt);
      if (isControlPlaneError(decided)) return { status: 'failed', error: decided };

      const expectedRevision: ExpectedRevision = last ? last.revision : 'no_stream';
      const metadata = {
        actor: actor.id,
        actorRole: actor.role,
        occurredAt: decidedAt.toISOString(),
        ...(decided.reason ? { reason: decided.reason } : {}),
        ...(fromRequest ? { changeId: fromRequest.changeId, request: fromRequest.request } : {}),
      };
      try {
        const appended = await store.append(plan.target, [{ type: decided.event.type, data: decided.event.data, metadata }], { expectedRevision });
        if (decided.event.type === 'TenantRegistered') governor?.confirmTenant(decided.event.data.tenantId);
        return { status: 'applied', position: appended.position };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision)) throw error;
        // Spread the contenders out so they do not collide again in lock step.
        await sleep(Math.random() * Math.min(50, 2 * attempt));
      }
    }
    return {
      status: 'failed',
      error: controlPlaneError('ConcurrentEdit', `${plan.target} kept changing under ${maxAttempts} attempts; nothing was appended, try again`),
    };
  }

  const commands = {} as Record<string, (actor: Caller, input: unknown) => Promise<ControlPlaneResult | LimitChangeResult>>;
  for (const [name, definition] of Object.entries(CONTROL_PLANE_COMMANDS)) {
    commands[name] = (actor, input) => run(definition as ControlPlaneCommand<unknown>, actor, input);
  }
  const requests = createLimitChangeRequests({ store, now, maxAttempts, run });
  for (const name of LIMIT_CHANGE_COMMANDS) commands[name] = (actor, input) => requests.request(name, actor, input as LimitChangeInput);
  return { ...commands, ...requests.decisions } as unknown as ControlPlane;
}
