// `governance serve | migrate | projections rebuild [name] | token --role ROLE [--tenant T] [--sub NAME] [--ttl 1h]`
import { parseArgs } from 'node:util';
import { readSettings } from './config.ts';
import { openDb } from './db/open.ts';
import { migrate } from './db/migrate.ts';
import { createLogger } from './logger.ts';
import { startService } from './service.ts';
import { createServer, listen } from './server.ts';

const USAGE = `usage: governance <command>
  serve                          start the service (GraphQL, ingest, metrics, projections)
  migrate                        apply database migrations
  projections rebuild [name]     rebuild one or every projection from the ledger
  token --role ROLE [--tenant T] [--sub NAME] [--ttl 1h]   mint a signed JWT for local use`;

async function serve(): Promise<void> {
  const settings = readSettings();
  const logger = createLogger(settings.logLevel);
  const service = await startService(settings, logger);
  const server = createServer(service, service.routes);
  const address = await listen(server, settings.port, settings.host);
  logger.info({ port: address.port, host: settings.host }, `governance-ledger listening on http://localhost:${address.port}/graphql`);
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close();
    server.closeAllConnections();
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

async function runMigrations(): Promise<void> {
  const db = await openDb(readSettings());
  try {
    const applied = await migrate(db);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'migrate':
      return runMigrations();
    default:
      console.error(USAGE);
      process.exitCode = command ? 2 : 0;
      void parseArgs;
      void rest;
  }
}

await main(process.argv.slice(2));
