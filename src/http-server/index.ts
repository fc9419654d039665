// The HTTP server's surface: routes, health and readiness, and the server with its shutdown.
export * from './route.ts';
export * from './health.ts';
export * from './server.ts';
export * from './shutdown.ts';
export * from './turnBudget.ts';
