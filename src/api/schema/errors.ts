// The typed errors of mutation payloads. Every one implements `Error { message }`, so a client can always
// ask `... on Error { message }` and only spell out the kinds it acts on.
import { builder } from '../builder.ts';
import {
  CommandAlreadySettled,
  CommandIdConflict,
  ConcurrentEdit,
  Forbidden,
  InvalidInput,
  InvalidLimit,
  TenantAlreadyRegistered,
  TierAlreadyDefined,
  UnknownCommand,
  UnknownIngestKey,
  UnknownTenant,
  UnknownTier,
} from './errorClasses.ts';

export const ErrorInterface = builder.interfaceRef<Error>('Error').implement({
  fields: (t) => ({ message: t.exposeString('message') }),
});

/** An error that names the input field at fault, when one is; every mutation payload can be asked for it. */
const InputErrorInterface = builder.interfaceRef<Error & { field: string | null }>('InputError').implement({
  interfaces: [ErrorInterface],
  fields: (t) => ({ field: t.exposeString('field', { nullable: true }) }),
});

/** The one rule for refusals, stated on Query, Mutation and Forbidden alike. */
export const REFUSAL_RULE =
  'Refusals for the caller’s role or tenant: every mutation’s payload union includes Forbidden, so a refused ' +
  'mutation answers HTTP 200 with a Forbidden payload and appends nothing; a refused read (a Query or ' +
  'Subscription field) answers HTTP 200 with an entry in `errors` whose extensions.code is FORBIDDEN and no data ' +
  'for that field. A missing, invalid or expired token is refused before any field runs: HTTP 401.';

builder.objectType(Forbidden, {
  name: 'Forbidden',
  description: `The caller’s role or tenant does not allow this mutation; nothing was appended. ${REFUSAL_RULE}`,
  interfaces: [ErrorInterface],
});

const fieldErrors = [
  [InvalidLimit, 'InvalidLimit', 'A limit outside 1 to 1,000,000, or a field the dimension does not use.'],
  [InvalidInput, 'InvalidInput', 'Input that is malformed or missing.'],
  [UnknownTenant, 'UnknownTenant', 'No tenant with that id is registered.'],
  [UnknownTier, 'UnknownTier', 'No tier with that id is defined.'],
  [UnknownCommand, 'UnknownCommand', 'No command with that id is in the tenant’s backlog or history.'],
  [CommandIdConflict, 'CommandIdConflict', 'The commandId was already used for a command with another device or payload; a commandId names one command.'],
  [TierAlreadyDefined, 'TierAlreadyDefined', 'A tier with that id exists.'],
  [TenantAlreadyRegistered, 'TenantAlreadyRegistered', 'A tenant with that id exists.'],
  [UnknownIngestKey, 'UnknownIngestKey', 'The tenant has no ingest key with that keyId.'],
  [ConcurrentEdit, 'ConcurrentEdit', 'Someone changed the same thing at the same moment; read again and retry.'],
] as const;

for (const [errorClass, name, description] of fieldErrors) {
  builder.objectType(errorClass, {
    name,
    description: `${description} Nothing was appended.`,
    interfaces: [ErrorInterface, InputErrorInterface],
  });
}

builder.objectType(CommandAlreadySettled, {
  name: 'CommandAlreadySettled',
  description: 'The command already left the backlog (delivered, failed, cancelled or expired). Nothing was appended.',
  interfaces: [ErrorInterface, InputErrorInterface],
  fields: (t) => ({
    settledAs: t.string({
      nullable: true,
      description: 'How it left: delivered, failed, cancelled or expired.',
      resolve: (error) => error.settledAs,
    }),
  }),
});
