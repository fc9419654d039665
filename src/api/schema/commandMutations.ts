// Command delivery: enqueue against the tenant's undelivered-command ceiling, and settle one as delivered,
// failed or cancelled.
// A refusal at the ceiling is an expected, retryable outcome (CommandRejected), never an error.
import type { CommandAccepted, CommandRejected, CommandSettled, SettleOutcome } from '../../command-backlog/index.ts';
import { canDeliverCommands } from '../../auth/index.ts';
import { builder } from '../builder.ts';
import { CommandAlreadySettled, CommandIdConflict, Forbidden, InvalidInput, UnknownCommand } from './errorClasses.ts';

const CommandRejectionReasonEnum = builder.enumType('CommandRejectionReason', {
  values: ['CEILING_REACHED', 'UNKNOWN_TENANT'] as const,
});

const CommandAcceptedType = builder.objectRef<CommandAccepted>('CommandAccepted').implement({
  description: 'The command joined the backlog; `undelivered` counts it.',
  isTypeOf: (value) => (value as { status?: string }).status === 'accepted',
  fields: (t) => ({
    commandId: t.exposeID('commandId'),
    undelivered: t.exposeInt('undelivered'),
    // Always set here; nullable only so a client can select `ceiling` on both members of
    // EnqueueCommandResult (CommandRejected has none for an unknown tenant) in one query.
    ceiling: t.exposeInt('ceiling', { nullable: true }),
  }),
});

const CommandRejectedType = builder.objectRef<CommandRejected>('CommandRejected').implement({
  description: 'Refused, and nothing was queued. CEILING_REACHED is retryable after retryAfterSeconds with the same commandId.',
  isTypeOf: (value) => (value as { status?: string }).status === 'rejected',
  fields: (t) => ({
    commandId: t.exposeID('commandId'),
    reason: t.field({ type: CommandRejectionReasonEnum, resolve: (rejected) => rejected.reason }),
    message: t.string({ description: 'The refusal in words, with what to do about it.', resolve: rejectionMessage }),
    retryable: t.exposeBoolean('retryable'),
    retryAfterSeconds: t.exposeInt('retryAfterSeconds', { nullable: true }),
    undelivered: t.exposeInt('undelivered'),
    ceiling: t.exposeInt('ceiling', { nullable: true }),
  }),
});

/** What a person reads of a refusal: the reason, the numbers behind it and what to do. */
export function rejectionMessage(rejected: CommandRejected): string {
  if (rejected.reason === 'UNKNOWN_TENANT') return 'no such tenant is registered; nothing was queued (register it first)';
  return (
    `the tenant's backlog is full: ${rejected.undelivered} undelivered command(s) at its UNDELIVERED_COMMANDS ceiling of ${rejected.ceiling ?? '?'}; ` +
    `nothing was queued: enqueue the same commandId again in ${rejected.retryAfterSeconds ?? 1} s, or once commands are delivered`
  );
}

// Errors are answered as returned values: the errors plugin picks their union member.
// A commandId sent again: the same content answers as the first time while the command is queued, and
// CommandAlreadySettled (with how it left) once it has left; other content is CommandIdConflict.
const EnqueueCommandResult = builder.errorUnion('EnqueueCommandResult', {
  types: [CommandAcceptedType, CommandRejectedType, InvalidInput, Forbidden, CommandIdConflict, CommandAlreadySettled],
});

const EnqueueCommandInput = builder.inputType('EnqueueCommandInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    commandId: t.id({ required: true }),
    deviceId: t.id({ required: true }),
    payload: t.field({ type: 'JSON', required: true }),
  }),
});

const MarkCommandDeliveredInput = builder.inputType('MarkCommandDeliveredInput', {
  fields: (t) => ({ tenantId: t.id({ required: true }), commandId: t.id({ required: true }) }),
});

const MarkCommandFailedInput = builder.inputType('MarkCommandFailedInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    commandId: t.id({ required: true }),
    error: t.string({ description: 'What the device or connector reported, if anything.' }),
  }),
});

const CancelCommandInput = builder.inputType('CancelCommandInput', {
  fields: (t) => ({ tenantId: t.id({ required: true }), commandId: t.id({ required: true }), reason: t.string({ required: true }) }),
});

const CommandSettledType = builder.objectRef<CommandSettled>('CommandSettled').implement({
  description: 'The command left the backlog; `undelivered` is the backlog after it left.',
  fields: (t) => ({ commandId: t.exposeID('commandId'), undelivered: t.exposeInt('undelivered') }),
});

function settled(outcome: SettleOutcome): CommandSettled {
  if (outcome.status === 'settled') return outcome;
  if (outcome.status === 'invalid') throw new InvalidInput(outcome.message, outcome.field);
  if (outcome.error.kind === 'UnknownCommand') throw new UnknownCommand(outcome.error.message, 'commandId');
  throw new CommandAlreadySettled(outcome.error.message, 'commandId', outcome.error.settledAs);
}

const SETTLE_ERRORS = [Forbidden, InvalidInput, UnknownCommand, CommandAlreadySettled];

builder.mutationFields((t) => ({
  enqueueCommand: t.field({
    type: EnqueueCommandResult,
    args: { input: t.arg({ type: EnqueueCommandInput, required: true }) },
    resolve: async (_root, { input }, { actor, commandBacklog }) => {
      if (!canDeliverCommands(actor, input.tenantId)) return new Forbidden(`role ${actor.role} may not enqueue commands for tenant ${input.tenantId}`);
      const outcome = await commandBacklog.enqueue(actor, { ...input, payload: input.payload });
      switch (outcome.status) {
        case 'invalid':
          return new InvalidInput(outcome.message, outcome.field);
        case 'conflict':
          return new CommandIdConflict(outcome.message, 'commandId');
        case 'settled-before':
          return new CommandAlreadySettled(outcome.message, 'commandId', outcome.settledAs);
        default:
          return outcome;
      }
    },
  }),
  markCommandDelivered: t.field({
    type: CommandSettledType,
    args: { input: t.arg({ type: MarkCommandDeliveredInput, required: true }) },
    authScopes: (_root, { input }) => ({ deliverCommands: input.tenantId }),
    errors: {
      types: SETTLE_ERRORS,
      directResult: true,
      union: { name: 'MarkCommandDeliveredPayload' },
    },
    resolve: async (_root, { input }, { actor, commandBacklog }) => settled(await commandBacklog.markDelivered(actor, input)),
  }),
  markCommandFailed: t.field({
    type: CommandSettledType,
    args: { input: t.arg({ type: MarkCommandFailedInput, required: true }) },
    authScopes: (_root, { input }) => ({ deliverCommands: input.tenantId }),
    errors: { types: SETTLE_ERRORS, directResult: true, union: { name: 'MarkCommandFailedPayload' } },
    resolve: async (_root, { input }, { actor, commandBacklog }) =>
      settled(await commandBacklog.markFailed(actor, { ...input, error: input.error ?? undefined })),
  }),
  cancelCommand: t.field({
    type: CommandSettledType,
    args: { input: t.arg({ type: CancelCommandInput, required: true }) },
    authScopes: (_root, { input }) => ({ deliverCommands: input.tenantId }),
    errors: { types: SETTLE_ERRORS, directResult: true, union: { name: 'CancelCommandPayload' } },
    resolve: async (_root, { input }, { actor, commandBacklog }) => settled(await commandBacklog.cancel(actor, input)),
  }),
}));
