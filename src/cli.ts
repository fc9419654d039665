// `governance serve | migrate | projections rebuild [name] | token --role ROLE [--tenant T] [--sub NAME] [--ttl 1h]`
import { parseArgs } from 'node:util';
import { readSettings } from './config.ts';
import { openDb } from './db/open.ts';
import { migrate } from './db/migrate.ts';
import { DataDirInUse } from './db/dataDirLock.ts';
import { createLogger } from './logger.ts';
import { startService } from './service.ts';
import { createServer, listen } from './server.ts';
import { openEventStore } from './ledger/openEventStore.ts';
import { rebuildProjection } from './ledger/rebuild.ts';
import { progressBar } from './ledger/rebuildProgress.ts';
import { allProjections } from '../projections/index.ts';
import { loadOrCreateJwtSecret } from './api/auth/jwtSecret.ts';
import { mintToken } from './api/auth/token.ts';
import { isRole, isTenantRole } from './api/auth/roles.ts';
import { registerIngestCredential } from './http/credentials.ts';

const USAGE = `usage: governance <command>
  serve                          start the service (GraphQL, ingest, metrics, projections)
  migrate                        apply database migrations
  projections rebuild [name]     rebuild one or every projection from the ledger
  token --role ROLE [--tenant T] [--sub NAME] [--ttl 1h]   mint a signed JWT for local use
  ingest-key --tenant T [--device D | --integration I]    issue an X-Device-Key for the ingest front door`;

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

/** Rebuilds one projection (by name) or all of them, each with its own progress bar. */
async function rebuildProjections(name: string | undefined): Promise<void> {
  const settings = readSettings();
  const projections = allProjections().filter((projection) => !name || projection.name === name);
  if (projections.length === 0) {
    const known = allProjections().map((projection) => projection.name);
    throw new UsageError(`no projection named ${name}; known: ${known.join(', ')}`);
  }
  const db = await openDb(settings);
  const store = openEventStore(db, settings.eventStoreUrl);
  try {
    await migrate(db);
    for (const projection of projections) {
      const bar = progressBar(projection.name);
      const result = await rebuildProjection(db, store, projection, { onProgress: bar.onProgress }).finally(bar.stop);
      console.log(`${result.projection}: ${result.eventsApplied} events applied of ${result.eventsRead} read in ${result.seconds.toFixed(1)} s`);
    }
  } finally {
    await store.close();
    await db.close();
  }
}

async function token(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { role: { type: 'string' }, tenant: { type: 'string' }, sub: { type: 'string' }, ttl: { type: 'string', default: '1h' } },
  });
  if (!isRole(values.role)) throw new UsageError('--role is one of OPERATOR, AUDITOR, SERVICE, TENANT_ADMIN, TENANT_VIEWER');
  if (isTenantRole(values.role) !== Boolean(values.tenant)) {
    throw new UsageError(isTenantRole(values.role) ? `--role ${values.role} needs --tenant` : `--tenant goes only with TENANT_ADMIN or TENANT_VIEWER`);
  }
  const { secret } = await loadOrCreateJwtSecret(readSettings());
  console.log(await mintToken({ secret, role: values.role, tenant: values.tenant, sub: values.sub, ttl: values.ttl! }));
}

/** Issues an ingest credential and prints the key: it is shown once, only its hash is stored. */
async function ingestKey(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string' }, device: { type: 'string' }, integration: { type: 'string' } },
  });
  if (!values.tenant) throw new UsageError('ingest-key needs --tenant');
  if (values.device && values.integration) throw new UsageError('ingest-key takes --device or --integration, not both');
  const kind = values.device ? 'device' : values.integration ? 'integration' : 'tenant';
  const db = await openDb(readSettings());
  try {
    await migrate(db);
    const result = await registerIngestCredential(db, {
      tenantId: values.tenant,
      kind,
      subject: values.device ?? values.integration ?? null,
    });
    if (result.status === 'invalid') throw new UsageError(`${result.field}: ${result.message}`);
    console.log(result.key);
  } finally {
    await db.close();
  }
}

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'migrate':
      return runMigrations();
    case 'projections':
      if (rest[0] !== 'rebuild') throw new UsageError('projections takes: rebuild [name]');
      return rebuildProjections(rest[1]);
    case 'token':
      return token(rest);
    case 'ingest-key':
      return ingestKey(rest);
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  }
}

await main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  console.error(error instanceof DataDirInUse ? error.message : error);
  process.exitCode = 1;
});
