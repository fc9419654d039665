import { GraphQLError, Kind } from '../graphql.ts';
import { builder } from '../builder.ts';

function parseDateTime(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) {
    throw new GraphQLError('DateTime must be an ISO 8601 date and time, e.g. 2026-01-31T12:00:00Z', {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return date;
}

builder.scalarType('DateTime', {
  description: 'An instant as an ISO 8601 string in UTC.',
  serialize: (value) => (value instanceof Date ? value : new Date(value)).toISOString(),
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: (value) => value,
});
