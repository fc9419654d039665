// The console's surface: the route that serves the built operator console.
export * from './consoleRoute.ts';
export * from './favicon.ts';
export * from './graphiqlWithConsoleToken.ts';
export * from './pageSecurity.ts';
