// Errors of read fields. A query field answers data or a GraphQL error with a code; the typed unions are for
// mutations, whose clients must act on each outcome.
import { GraphQLError } from './graphql.ts';

export class UnknownTenantError extends GraphQLError {
  constructor(tenantId: string) {
    super(`no tenant ${JSON.stringify(tenantId)} is registered`, { extensions: { code: 'UNKNOWN_TENANT', tenantId } });
  }
}

export function badInput(field: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', field } });
}
