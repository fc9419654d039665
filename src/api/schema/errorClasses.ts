// The typed errors a mutation answers with. Command handlers return failures as values; a resolver turns
// the value into one of these, and the errors plugin answers it as a member of the mutation's payload union
// (see schema/errors.ts). Forbidden is also a GraphQLError, so on a field that does not list it the refusal
// reaches the client as an error with code FORBIDDEN rather than being masked.
import { GraphQLError } from '../graphql.ts';

export class Forbidden extends GraphQLError {
  constructor(message: string) {
    super(message, { extensions: { code: 'FORBIDDEN' } });
  }
}

/** A failure that names the input field at fault, when one is. */
abstract class FieldError extends Error {
  constructor(
    message: string,
    readonly field: string | null,
  ) {
    super(message);
  }
}

export class InvalidLimit extends FieldError {}
export class InvalidInput extends FieldError {}
export class UnknownTenant extends FieldError {}
export class UnknownTier extends FieldError {}
export class UnknownCommand extends FieldError {}
export class CommandAlreadySettled extends FieldError {
  constructor(
    message: string,
    field: string | null,
    /** How it left: delivered, failed, cancelled or expired. */
    readonly settledAs: string | null = null,
  ) {
    super(message, field);
  }
}
export class CommandIdConflict extends FieldError {}
export class TierAlreadyDefined extends FieldError {}
export class TenantAlreadyRegistered extends FieldError {}
export class ConcurrentEdit extends FieldError {}
export class UnknownIngestKey extends FieldError {}
