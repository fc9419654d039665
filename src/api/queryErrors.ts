// Errors of read fields. A query field answers data or a GraphQL error with a code; the typed unions are for
// mutations, whose clients must act on each outcome.
import { GraphQLError } from './graphql.ts';

export class UnknownTenantError extends GraphQLError {
  constructor(tenantId: string) {
    super(`no tenant ${JSON.stringify(tenantId)} is registered`, { extensions: { code: 'UNKNOWN_TENANT', tenantId } });
  }
}

/** A past instant before the tenant existed: not "unknown tenant", which would read as if it did not exist now. */
export class NotRegisteredAtError extends GraphQLError {
  constructor(tenantId: string, at: Date, registeredAt: Date | null) {
    super(
      registeredAt
        ? `tenant ${JSON.stringify(tenantId)} was not registered at ${at.toISOString()}: it was registered at ${registeredAt.toISOString()}`
        : `tenant ${JSON.stringify(tenantId)} was not registered at ${at.toISOString()}, and is not registered now`,
      { extensions: { code: 'NOT_REGISTERED_AT', tenantId, at: at.toISOString(), registeredAt: registeredAt?.toISOString() ?? null } },
    );
  }
}

export function badInput(field: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', field } });
}
