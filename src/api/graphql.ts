// graphql from its CommonJS build, the one yoga, Pothos and envelop load. graphql 16 also ships an ESM build
// (index.mjs) that some bundlers (vitest's) pick for our own files; a class from that second copy fails the
// first copy's instanceof checks: an error we raise gets masked as "Unexpected error.", and printing the
// schema fails with "from another module or realm". Everything of graphql we use comes from here.
export { GraphQLError, Kind, printSchema, getNullableType, isInputObjectType, isListType, isScalarType } from 'graphql/index.js';
export type { GraphQLArgument, GraphQLFieldResolver, GraphQLInputType, GraphQLResolveInfo } from 'graphql/index.js';
