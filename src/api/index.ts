// The API's surface: the GraphQL route (schema, auth, protection), its pub/sub and the publishers that feed
// subscriptions after each projection commit.
export * from './createGraphQLRoute.ts';
export * from './pubsub.ts';
export * from './publishers.ts';
