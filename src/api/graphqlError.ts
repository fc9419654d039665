// GraphQLError from the CommonJS build of graphql, the one yoga, Pothos and envelop load. graphql 16 also
// ships an ESM build (index.mjs) that some bundlers (vitest's) pick for our own files; an error made from
// that second class fails yoga's `instanceof GraphQLError` check and gets masked as "Unexpected error."
// Every GraphQLError we raise comes from here, so there is only ever one class.
export { GraphQLError } from 'graphql/index.js';
