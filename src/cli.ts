// `governance <command>`: the service and the operator's local tools. Every command answers --help; every
// failure is one line on stderr and exit code 2, never a stack trace (a wrong flag and a busy data directory
// alike), so scripts can test the exit code and people can read the line. Each command imports what it needs
// when it runs, so --help and token answer without loading the whole service.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readSettings } from './config.ts';
import { formatSeconds, joinDashedValues, UsageError, oneLine, parseServiceUrl, parseTtl } from './cliSupport.ts';
import { SERVICE_NODE_FLAGS, tuneGarbageCollection, v8PoolSize, V8_POOL_SIZE } from './gcTuning.ts';

interface CliCommand {
  /** The synopsis line of the overall usage. */
  synopsis: string;
  /** What `governance <command> --help` prints below the synopsis. */
  help: string;
  run(args: string[]): Promise<void>;
}

const COMMANDS: Record<string, CliCommand> = {
  serve: {
    synopsis: 'serve                          start the service (GraphQL, ingest, metrics, projections)',
    help: 'Starts the service on PORT (default 4000) with the storage the environment names (see the README).',
    run: async (args) => {
      parse(args, {});
      await serve();
    },
  },
  migrate: {
    synopsis: 'migrate                        apply database migrations',
    help: 'Applies the migrations in migrations/ that the database has not seen yet.',
    run: async (args) => {
      parse(args, {});
      await runMigrations();
    },
  },
  projections: {
    synopsis: 'projections rebuild [name] | projections quarantine [name] [--json]   rebuild projections; list the events they set aside',
    help: [
      'projections rebuild [name]',
      "                      rebuilds a projection's read model from the ledger (every projection without a name),",
      '                      with a progress bar',
      'projections quarantine [name]',
      '                      lists the ledger events a projection (every projection without a name) set aside',
      '                      instead of applying, in ledger order, each with its reason (src/ledger/README.md)',
      '  --json              one JSON object a line instead',
    ].join('\n'),
    run: async (args) => {
      const { positionals, values } = parse(args, { json: { type: 'boolean', default: false } }, true);
      const [action, name, ...rest] = positionals;
      if (action === 'rebuild' && rest.length === 0 && !values.json) {
        await rebuildProjections(name);
        return;
      }
      if (action === 'quarantine' && rest.length === 0) {
        await listProjectionQuarantine(name, values.json);
        return;
      }
      throw new UsageError('projections takes: rebuild [name], or quarantine [name] [--json]');
    },
  },
  ledger: {
    synopsis:
      'ledger archive [--before YYYY-MM-DD] [--dir D] | ledger read-archive FILE | ledger public-key | ledger export --out FILE [--from X] [--to X] [--since CHECKPOINT] | ledger verify [FILE --public-key KEY [--since CHECKPOINT]]   archive old admission summaries; read an archive back; export and verify the ledger',
    help: [
      'ledger archive        archives every day of admission summaries before --before (default: today minus',
      '                      GOVERNANCE_LEDGER_RETENTION_DAYS, 30) to --dir (default GOVERNANCE_LEDGER_ARCHIVE_DIR,',
      '                      else <GOVERNANCE_DATA_DIR>/ledger-archive): one NDJSON.gz file and a manifest with its',
      '                      sha256 per day, checked, handed to GOVERNANCE_LEDGER_ARCHIVE_COMMAND when set, then',
      '                      dropped from the ledger. A day goes only once it has ended and every projection that',
      '                      reads summaries has applied it. Limit changes, commands and every other stream stay.',
      '  --before YYYY-MM-DD  archive the days before this UTC day',
      '  --dir D              where the files go',
      'ledger read-archive FILE',
      '                      checks FILE against its manifest (sha256, size, events), then prints its events, one',
      '                      JSON line each, in ledger order',
      '  --no-verify          print without checking the manifest first',
      'ledger public-key     prints the verifier key (C2SP vkey) that checks the ledger\'s signed checkpoints',
      'ledger export --out FILE [--from X] [--to X] [--since CHECKPOINT]',
      '                      writes the events of leaves [--from, --to) (leaf indexes, or ISO 8601 instants) with the',
      '                      latest signed checkpoint and what proves them against it (docs/verifiable-ledger.md)',
      'ledger verify FILE --public-key KEY [--since CHECKPOINT]',
      '                      checks an export offline (no database, no network): every leaf, the root, the signature,',
      '                      and consistency with an earlier checkpoint file. Exit 0 with a summary line, or exit 1',
      '                      naming the first bad event. FILE may be an archive file (ledger archive): each event\'s',
      '                      inclusion proof against the checkpoint its manifest carries',
      'ledger verify [--public-key KEY]',
      '                      checks the stored ledger the same way, every signed checkpoint included, and the',
      '                      leaves of archived days against their archive files where those are found',
    ].join('\n'),
    run: ledger,
  },
  limits: {
    synopsis:
      'limits preview (--tenant T | --tier T | --platform) --dimension D --rate N [--burst N] [--from X] [--to X] [--first N] [--json]   what a limit change would have refused',
    help: [
      'limits preview        replays the recorded per-second demand of every tenant the change affects through the',
      '                      proposed limit and the limit in force now (src/limit-preview/README.md), and prints a',
      '                      table: per tenant and in total, units and messages refused, seconds limited, the worst',
      '                      minute, and what was refused then. Reads the database the environment names.',
      '  --tenant T          an override of tenant T',
      '  --tier T            the limit of tier T (its tenants)',
      '  --platform          the platform default (every tenant)',
      '  --dimension D       INGEST, EGRESS, AI_INFERENCE, PROVISIONING or API_REQUESTS',
      '  --rate N            the proposed ratePerSecond',
      '  --burst N           the proposed burst (default: the rate times the shipped ratio)',
      '  --from X, --to X    ISO 8601 instants (default: the last 7 days; at most 31)',
      '  --first N           tenants listed, most refused first (default 100, at most 1000)',
      '  --json              the answer as one JSON object',
    ].join('\n'),
    run: limits,
  },
  usage: {
    synopsis: 'usage export --from X --to X [--format csv|ndjson] [--granularity DAY|MONTH] [--tenant T]   usage per tenant, dimension and period, for billing',
    help: [
      'usage export          prints admitted, shed, rejected and quota-rejected units, and the quota\'s limit, used and',
      '                      left, per tenant, dimension and period, summed from the ledger\'s admission summaries whose',
      '                      first second lies in [--from, --to) (ISO 8601 dates or instants; at most 400 days)',
      '  --format            csv (default, with a header line) or ndjson',
      '  --granularity       DAY (default) or MONTH: the tenant\'s quota periods where it has a quota of that length',
      '                      (its time zone and reset day), else UTC days or months',
      '  --tenant T          one tenant only',
    ].join('\n'),
    run: usageExport,
  },
  token: {
    synopsis: 'token --role ROLE [--tenant T] [--sub NAME] [--ttl 1h] [--data-dir D]   mint a signed JWT for local use',
    help: [
      'Signs with GOVERNANCE_JWT_SECRET when it is set, else with the secret the service keeps in its data directory',
      '(<data dir>/jwt-secret); says which on stderr. Use the settings of the service the token is for.',
      '--role      OPERATOR, AUDITOR, SERVICE, TENANT_ADMIN or TENANT_VIEWER',
      '--tenant    the tenant a TENANT_ADMIN or TENANT_VIEWER acts for (only with those roles)',
      '--sub       who the token names; recorded as the actor of what it changes',
      '--ttl       lifetime: seconds, or a number with s, m, h, d or w (default 1h); at most GOVERNANCE_JWT_MAX_TTL (24h)',
      '--data-dir  the data directory of the service (default GOVERNANCE_DATA_DIR, else ./data)',
    ].join('\n'),
    run: token,
  },
  'ingest-key': {
    synopsis: 'ingest-key --tenant T [--device D | --integration I]    issue an X-Device-Key for the ingest front door',
    help: [
      'Prints a new key once; only its hash is stored. Without --device or --integration the key serves any',
      'device of the tenant. On embedded storage the service must be stopped; while it runs, use the',
      'issueIngestKey mutation instead.',
    ].join('\n'),
    run: ingestKey,
  },
  demo: {
    synopsis: 'demo [--url http://localhost:4000] [--seconds 60] [--data-dir D]   set up a tier, two tenants and a key on a running service, drive traffic, print queries',
    help: [
      'Against a running service (npm start in another terminal; embedded storage or PostgreSQL): defines the tier',
      '"demo" (INGEST 10/s), registers acme and globex on it, issues a device key for each, sends acme three times',
      'its limit and globex less than it for --seconds, and prints the queries that show what was accepted and',
      'refused. Signs its OPERATOR token with the secret of the service it talks to: GOVERNANCE_JWT_SECRET when set,',
      'else the one in the data directory; when the service refuses one it tries the other, and says which it used.',
      '--url       the service (default http://localhost:$PORT, PORT default 4000; http:// when no scheme is given)',
      '--seconds   how long to send traffic, 1 to 3600 (default 60)',
      '--data-dir  the data directory of the service (default GOVERNANCE_DATA_DIR, else ./data)',
    ].join('\n'),
    run: demo,
  },
};

const USAGE = `usage: governance <command> [--help]\n${Object.values(COMMANDS)
  .map((command) => `  ${command.synopsis}`)
  .join('\n')}`;

/** parseArgs with --help on every command, and no stray positionals unless the command takes some. */
function parse<Options extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: Options, positionals = false) {
  const valueOptions = new Set(Object.entries(options).filter(([, option]) => option.type === 'string').map(([name]) => `--${name}`));
  const parsed = parseArgs({ args: joinDashedValues(args, valueOptions), options, allowPositionals: positionals, strict: true });
  return parsed;
}

async function serve(): Promise<void> {
  const settings = readSettings();
  tuneGarbageCollection();
  const [{ createLogger }, { openStorage }] = await Promise.all([import('./logger.ts'), import('./db/openStorage.ts')]);
  const logger = createLogger(settings.logLevel);
  // The database opens and migrates while the rest of the service loads: PGlite compiles its WebAssembly on
  // other threads meanwhile, and PostgreSQL answers over the network. startService waits for it (and fails
  // the start with its error).
  const storage = openStorage(settings, logger);
  storage.catch(() => {});
  const poolSize = v8PoolSize();
  if (poolSize !== V8_POOL_SIZE) {
    logger.warn(
      { v8PoolSize: poolSize, wanted: V8_POOL_SIZE, flags: SERVICE_NODE_FLAGS },
      `started without ${SERVICE_NODE_FLAGS.join(' ')} (bin/governance.js, npm start and the image pass it): a full collection's helper threads may take every core from the admitting thread (src/gcTuning.ts)`,
    );
  }
  if (settings.nice !== undefined || settings.realtimePriority !== undefined) {
    const { setRealtimePriority, setSessionNice } = await import('./sessionPriority.ts');
    if (settings.nice !== undefined) {
      const set = await setSessionNice(settings.nice);
      if (set.refused === undefined) logger.info({ nice: set.nice }, 'session priority set (GOVERNANCE_NICE)');
      else logger.warn({ asked: settings.nice, nice: set.nice, refused: set.refused }, 'GOVERNANCE_NICE refused: the session runs at its priority as started');
    }
    if (settings.realtimePriority !== undefined) {
      const set = await setRealtimePriority(settings.realtimePriority);
      if (set.refused === undefined) logger.info({ priority: set.priority }, 'the admitting thread runs under SCHED_RR (GOVERNANCE_REALTIME_PRIORITY)');
      else logger.warn({ asked: settings.realtimePriority, priority: set.priority, refused: set.refused }, 'GOVERNANCE_REALTIME_PRIORITY refused: the admitting thread runs at its priority as started');
    }
  }
  const [{ startService }, { createServer, listen }, { startRlsServer }, { endProcessOnSignalsAndCrashes }] = await Promise.all([
    import('./service.ts'),
    import('./http-server/server.ts'),
    import('./doors/envoy-rls/rlsServer.ts'),
    import('./processLifecycle.ts'),
  ]);
  const service = await startService(settings, logger, storage);
  const server = createServer(service, service.routes);
  const address = await listen(server, settings.port, settings.host);
  logger.info({ port: address.port, host: settings.host }, `governance-ledger listening on http://localhost:${address.port}/graphql`);
  const rls = await startRlsServer({
    decider: service.rateLimits,
    port: settings.grpcPort,
    host: settings.host,
    tls: settings.grpcTls,
    token: settings.grpcToken,
    logger,
  });
  logger.info({ host: rls.host, port: rls.port, tls: settings.grpcTls !== undefined, token: settings.grpcToken !== undefined }, "Envoy's rate limit service listening (gRPC)");
  // On SIGTERM /readyz drains first (GOVERNANCE_DRAIN_SECONDS); once the HTTP listener closed, the gRPC one
  // closes, then the service (which flushes the ledger).
  endProcessOnSignalsAndCrashes({
    logger,
    server,
    drainMs: settings.drainSeconds * 1000,
    service: { close: (options) => rls.close().then(() => service.close(options)) },
  });
}

async function runMigrations(): Promise<void> {
  const [{ openDb }, { migrate }] = await Promise.all([import('./db/open.ts'), import('./db/migrate.ts')]);
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
  const [{ openDb }, { migrate }, { openEventStore }, { rebuildProjection }, { progressBar }, { allProjections }] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./ledger/openEventStore.ts'),
    import('./ledger/rebuild.ts'),
    import('./ledger/rebuildProgress.ts'),
    import('../projections/index.ts'),
  ]);
  const settings = readSettings();
  const projections = allProjections().filter((projection) => !name || projection.name === name);
  if (projections.length === 0) {
    const known = allProjections().map((projection) => projection.name);
    throw new UsageError(`no projection named ${name}; known: ${known.join(', ')}`);
  }
  const db = await openDb(settings);
  const store = await openEventStore(db, settings.eventStoreUrl);
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

/** Prints the events the projections set aside (one projection's when named), in ledger order. */
async function listProjectionQuarantine(name: string | undefined, json: boolean): Promise<void> {
  const [{ openDb }, { migrate }, { listQuarantine }, { allProjections }] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./ledger/quarantine.ts'),
    import('../projections/index.ts'),
  ]);
  const known = allProjections().map((projection) => projection.name);
  if (name !== undefined && !known.includes(name)) throw new UsageError(`no projection named ${name}; known: ${known.join(', ')}`);
  const db = await openDb(readSettings());
  try {
    await migrate(db);
    const events = await listQuarantine(db, { projection: name });
    for (const event of events) {
      const position = `${event.position.commit}/${event.position.prepare}`;
      if (json) {
        console.log(
          JSON.stringify({
            projection: event.projection,
            eventId: event.id,
            eventType: event.type,
            stream: event.stream,
            position,
            quarantinedAt: event.quarantinedAt.toISOString(),
            reason: event.reason,
          }),
        );
      } else {
        console.log(`${event.quarantinedAt.toISOString()}  ${event.projection}  ${event.type} ${event.id} (stream ${event.stream}, position ${position})`);
        console.log(`    ${event.reason}`);
      }
    }
    if (!json) {
      const whose = name ? `projection ${name}` : 'any projection';
      console.log(events.length === 0 ? `no event is in the quarantine of ${whose}` : `${events.length} event(s) in the quarantine of ${whose}`);
    }
  } finally {
    await db.close();
  }
}

async function ledger(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === 'public-key' || action === 'export' || action === 'verify') {
    await verifiableLedgerCommand(action, rest);
    return;
  }
  const { values, positionals } = parse(
    args,
    { before: { type: 'string' }, dir: { type: 'string' }, 'no-verify': { type: 'boolean', default: false } },
    true,
  );
  if (action === 'archive') {
    if (positionals.length > 1 || values['no-verify']) throw new UsageError('ledger archive takes only --before and --dir');
    await archiveLedger(values.before, values.dir);
    return;
  }
  if (action === 'read-archive') {
    if (positionals.length !== 2 || values.before !== undefined || values.dir !== undefined) throw new UsageError('ledger read-archive takes one FILE (and --no-verify)');
    await readLedgerArchive(positionals[1]!, !values['no-verify']);
    return;
  }
  throw new UsageError('ledger takes: archive [--before YYYY-MM-DD] [--dir D], read-archive FILE, public-key, export, or verify');
}

/** `ledger public-key | export | verify` (docs/verifiable-ledger.md). A verify that finds the ledger altered exits 1. */
async function verifiableLedgerCommand(action: 'public-key' | 'export' | 'verify', args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    { from: { type: 'string' }, to: { type: 'string' }, out: { type: 'string' }, 'public-key': { type: 'string' }, since: { type: 'string' } },
    true,
  );
  const commands = await import('./ledger/verifiable/commands.ts');
  if (action === 'verify' && positionals.length === 1) {
    // Offline: the file and the key, no database.
    if (!values['public-key']) throw new UsageError('ledger verify FILE needs --public-key KEY (the vkey, or a file holding it)');
    const verdict = await commands.verifyFile(positionals[0]!, values['public-key'], values.since);
    console.log(commands.describeVerdict(verdict));
    if (!verdict.ok) process.exitCode = 1;
    return;
  }
  if (positionals.length > 0) throw new UsageError(`ledger ${action} takes no ${positionals.length === 1 ? 'argument' : 'arguments'} here`);
  const [{ openDb }, { migrate }] = await Promise.all([import('./db/open.ts'), import('./db/migrate.ts')]);
  const settings = readSettings();
  const db = await openDb(settings);
  // EVENTSTORE_URL: the tree is in the database beside the read models, the events on EventStoreDB.
  const ledger = settings.eventStoreUrl ? await (await import('./ledger/openEventStore.ts')).openEventStore(db, settings.eventStoreUrl) : undefined;
  try {
    await migrate(db);
    const keySettings = { dataDir: settings.dataDir, signingKey: settings.ledgerVerifiable.signingKey, origin: settings.ledgerVerifiable.origin };
    if (action === 'public-key') {
      console.log(await commands.ledgerPublicKey(db, keySettings, ledger));
    } else if (action === 'export') {
      if (!values.out) throw new UsageError('ledger export needs --out FILE');
      const since = values.since !== undefined ? await (await import('node:fs/promises')).readFile(values.since, 'utf8') : undefined;
      const range = { from: commands.parseBound(values.from, '--from'), to: commands.parseBound(values.to, '--to'), since };
      const events = await commands.exportToFile(db, range, values.out, ledger);
      console.log(`exported ${events} leaves to ${values.out}`);
    } else {
      const verdict = await commands.verifyDatabase(db, keySettings, values['public-key'], ledger);
      console.log(commands.describeVerdict(verdict));
      if (!verdict.ok) process.exitCode = 1;
    }
  } finally {
    await ledger?.close();
    await db.close();
  }
}

async function archiveLedger(before: string | undefined, dir: string | undefined): Promise<void> {
  const [{ openDb }, { migrate }, { archiveSummaryDays }, summaryPartitions, { allProjections }, { MERKLE_TREE_READER }] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./ledger/retention/archiveSummaries.ts'),
    import('./ledger/postgres/summaryPartitions.ts'),
    import('../projections/index.ts'),
    import('./ledger/verifiable/treeStore.ts'),
  ]);
  const settings = readSettings();
  if (settings.eventStoreUrl) throw new UsageError('EVENTSTORE_URL is set: archiving applies to the PostgreSQL ledger (EventStoreDB keeps its own streams)');
  if (before !== undefined && !summaryPartitions.isDay(before)) throw new UsageError(`--before "${before}" is not a day (YYYY-MM-DD)`);
  if (before === undefined && settings.ledgerRetentionDays === undefined) {
    throw new UsageError('GOVERNANCE_LEDGER_RETENTION_DAYS is forever: name the days with --before YYYY-MM-DD');
  }
  const until = before ?? summaryPartitions.addDays(summaryPartitions.dayOf(Date.now()), -settings.ledgerRetentionDays!);
  const db = await openDb(settings);
  try {
    await migrate(db);
    await summaryPartitions.ensureSummaryPartitions(db);
    const outcome = await archiveSummaryDays(db, {
      dir: dir ?? settings.ledgerArchiveDir,
      before: until,
      command: settings.ledgerArchiveCommand,
      projections: [...allProjections(), MERKLE_TREE_READER],
      onArchived: ({ day, file, manifest }) => console.log(`${day}: ${manifest.events} events -> ${file} (sha256 ${manifest.sha256})`),
    });
    for (const { day, reason } of outcome.skipped) console.log(`${day}: not archived: ${reason}`);
    if (outcome.archived.length === 0 && outcome.skipped.length === 0) console.log(`no day of admission summaries before ${until} is left to archive`);
  } finally {
    await db.close();
  }
}

async function readLedgerArchive(file: string, verify: boolean): Promise<void> {
  const { readArchive, verifyArchive } = await import('./ledger/retention/archiveFile.ts');
  if (verify) await verifyArchive(file);
  const write = (line: string) => new Promise<void>((resolve) => (process.stdout.write(line) ? resolve() : process.stdout.once('drain', resolve)));
  for await (const event of readArchive(file)) {
    await write(`${JSON.stringify(event, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))}\n`);
  }
}

/** `limits preview`: the limit preview, printed as a table. */
async function limits(args: string[]): Promise<void> {
  const { positionals, values } = parse(
    args,
    {
      tenant: { type: 'string' },
      tier: { type: 'string' },
      platform: { type: 'boolean', default: false },
      dimension: { type: 'string' },
      rate: { type: 'string' },
      burst: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      first: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    true,
  );
  if (positionals.length !== 1 || positionals[0] !== 'preview') throw new UsageError('limits takes: preview');
  const levels = [values.tenant !== undefined, values.tier !== undefined, values.platform].filter(Boolean).length;
  if (levels !== 1) throw new UsageError('give exactly one of --tenant, --tier and --platform');
  if (values.dimension === undefined || values.rate === undefined) throw new UsageError('--dimension and --rate are required');
  const whole = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) throw new UsageError(`--${name} "${text}" is not a whole number`);
    return Number(text);
  };
  const instant = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const at = new Date(text);
    if (Number.isNaN(at.getTime())) throw new UsageError(`--${name} "${text}" is not an ISO 8601 instant`);
    return at;
  };
  const limit = { dimension: values.dimension.toUpperCase(), ratePerSecond: whole('rate', values.rate), burst: whole('burst', values.burst) };
  const [{ openDb }, { migrate }, { formatPreview, previewLimitChange }] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./limit-preview/index.ts'),
  ]);
  const db = await openDb(readSettings());
  try {
    await migrate(db);
    const preview = await previewLimitChange(db, {
      ...(values.tenant !== undefined ? { override: { ...limit, tenantId: values.tenant } } : {}),
      ...(values.tier !== undefined ? { tierLimit: { ...limit, tierId: values.tier } } : {}),
      ...(values.platform ? { platformDefault: limit } : {}),
      from: instant('from', values.from) ?? null,
      to: instant('to', values.to) ?? null,
      first: whole('first', values.first) ?? null,
    });
    console.log(values.json ? JSON.stringify(preview) : formatPreview(preview));
  } finally {
    await db.close();
  }
}

async function token(args: string[]): Promise<void> {
  const { values } = parse(args, {
    role: { type: 'string' },
    tenant: { type: 'string' },
    sub: { type: 'string' },
    ttl: { type: 'string', default: '1h' },
    'data-dir': { type: 'string' },
  });
  const { isRole, isTenantRole } = await import('./auth/roles.ts');
  if (!isRole(values.role)) throw new UsageError('--role is one of OPERATOR, AUDITOR, SERVICE, TENANT_ADMIN, TENANT_VIEWER');
  if (isTenantRole(values.role) !== Boolean(values.tenant)) {
    throw new UsageError(isTenantRole(values.role) ? `--role ${values.role} needs --tenant` : `--tenant goes only with TENANT_ADMIN or TENANT_VIEWER`);
  }
  const settings = readSettingsFor(values['data-dir']);
  const ttl = tokenTtl(values.ttl!, settings.jwtMaxTtlSeconds);
  const [{ describeJwtSecret, loadOrCreateJwtSecret }, { mintToken }] = await Promise.all([import('./auth/jwtSecret.ts'), import('./auth/token.ts')]);
  const jwt = await loadOrCreateJwtSecret(settings);
  // The issuer and audience the service checks, so a minted token is one it accepts.
  console.log(await mintToken({ secret: jwt.secret, role: values.role, tenant: values.tenant, sub: values.sub, ttl, issuer: settings.jwtIssuer, audience: settings.jwtAudience }));
  // On stderr, so TOKEN=$(governance token ...) keeps only the token.
  console.error(`governance: signed with ${describeJwtSecret(jwt)}; a service with another secret answers 401`);
}

/** Settings as the environment gives them, with --data-dir in place of GOVERNANCE_DATA_DIR when given. */
function readSettingsFor(dataDir: string | undefined) {
  return readSettings(dataDir === undefined ? process.env : { ...process.env, GOVERNANCE_DATA_DIR: dataDir });
}

/** --ttl in seconds; a lifetime the service would refuse (GOVERNANCE_JWT_MAX_TTL) is refused here, at minting. */
function tokenTtl(text: string, maxTtlSeconds: number): number {
  const ttl = parseTtl(text);
  if (ttl > maxTtlSeconds) {
    throw new UsageError(
      `--ttl ${text} is longer than the service accepts: GOVERNANCE_JWT_MAX_TTL is ${formatSeconds(maxTtlSeconds)} (set it to the same value for the service and this command to allow longer)`,
    );
  }
  return ttl;
}

/** Issues an ingest credential and prints the key: it is shown once, only its hash is stored. */
async function ingestKey(args: string[]): Promise<void> {
  const { values } = parse(args, { tenant: { type: 'string' }, device: { type: 'string' }, integration: { type: 'string' } });
  if (!values.tenant) throw new UsageError('ingest-key needs --tenant');
  if (values.device && values.integration) throw new UsageError('ingest-key takes --device or --integration, not both');
  const kind = values.device ? 'device' : values.integration ? 'integration' : 'tenant';
  const [{ openDb }, { migrate }, { registerIngestCredential }, { openEventStore }, { tenantIsRegistered }] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./auth/ingestKeys.ts'),
    import('./ledger/openEventStore.ts'),
    import('./control-plane/index.ts'),
  ]);
  const settings = readSettings();
  const db = await openDb(settings);
  const store = await openEventStore(db, settings.eventStoreUrl);
  try {
    await migrate(db);
    if (!(await tenantIsRegistered(store, values.tenant))) throw new Error(`no tenant ${values.tenant} is registered: register it before issuing its keys`);
    const result = await registerIngestCredential(db, {
      tenantId: values.tenant,
      kind,
      subject: values.device ?? values.integration ?? null,
    });
    if (result.status === 'invalid') throw new UsageError(`${result.field}: ${result.message}`);
    console.log(result.key);
  } finally {
    await store.close();
    await db.close();
  }
}

async function demo(args: string[]): Promise<void> {
  const { values } = parse(args, { url: { type: 'string' }, seconds: { type: 'string', default: '60' }, 'data-dir': { type: 'string' } });
  const settings = readSettingsFor(values['data-dir']);
  const url = parseServiceUrl(values.url ?? `http://localhost:${settings.port}`);
  const seconds = Number(values.seconds);
  if (!/^\s*\d+\s*$/.test(values.seconds!) || !Number.isInteger(seconds) || seconds < 1 || seconds > 3600) {
    throw new UsageError(`--seconds "${values.seconds}" is not a whole number from 1 to 3600`);
  }
  const [{ describeJwtSecret, jwtSecretCandidates }, { mintToken }, { runDemo, serviceAccepts }] = await Promise.all([
    import('./auth/jwtSecret.ts'),
    import('./auth/token.ts'),
    import('./demo.ts'),
  ]);
  // The service's secret: the first candidate it accepts (the shell may export one the service does not use).
  const tried: string[] = [];
  let token: string | undefined;
  for (const jwt of await jwtSecretCandidates(settings)) {
    const candidate = await mintToken({ secret: jwt.secret, role: 'OPERATOR', sub: 'governance-demo', ttl: '1h', issuer: settings.jwtIssuer, audience: settings.jwtAudience });
    tried.push(describeJwtSecret(jwt));
    if (await serviceAccepts(url, candidate)) {
      token = candidate;
      console.log(`signed the demo's OPERATOR token with ${describeJwtSecret(jwt)}`);
      break;
    }
  }
  if (!token) {
    throw new Error(
      `the service at ${url} refuses tokens signed with ${tried.join(' and with ')}: give the demo the service's GOVERNANCE_DATA_DIR (or --data-dir) or its GOVERNANCE_JWT_SECRET`,
    );
  }
  await runDemo({ url, token, seconds, log: (line) => console.log(line) });
}

async function usageExport(args: string[]): Promise<void> {
  const { positionals, values } = parse(
    args,
    { from: { type: 'string' }, to: { type: 'string' }, format: { type: 'string', default: 'csv' }, granularity: { type: 'string', default: 'DAY' }, tenant: { type: 'string' } },
    true,
  );
  if (positionals.length !== 1 || positionals[0] !== 'export') throw new UsageError('usage takes: export --from X --to X');
  if (values.from === undefined || values.to === undefined) throw new UsageError('usage export needs --from and --to');
  if (values.format !== 'csv' && values.format !== 'ndjson') throw new UsageError(`--format "${values.format}" is not csv or ndjson`);
  if (values.granularity !== 'DAY' && values.granularity !== 'MONTH') throw new UsageError(`--granularity "${values.granularity}" is not DAY or MONTH`);
  const from = new Date(values.from);
  const to = new Date(values.to);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw new UsageError('--from and --to must be ISO 8601 dates or instants');
  const [{ openDb }, { migrate }, { openEventStore }, { createReadModelLimitSource }, quotas] = await Promise.all([
    import('./db/open.ts'),
    import('./db/migrate.ts'),
    import('./ledger/index.ts'),
    import('./control-plane/index.ts'),
    import('./quotas/index.ts'),
  ]);
  const settings = readSettings();
  const db = await openDb(settings);
  try {
    await migrate(db);
    const store = await openEventStore(db, settings.eventStoreUrl);
    try {
      const rows = await quotas.usage(store, createReadModelLimitSource(db), {
        from,
        to,
        granularity: values.granularity,
        ...(values.tenant !== undefined ? { tenantId: values.tenant } : {}),
      });
      process.stdout.write(values.format === 'csv' ? quotas.usageCsv(rows) : quotas.usageNdjson(rows));
    } finally {
      await store.close();
    }
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    if (name === undefined) throw new UsageError('a command is required');
    console.log(USAGE);
    return;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(`unknown command ${name}`);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(`usage: governance ${command.synopsis}\n\n${command.help}`);
    return;
  }
  await command.run(rest);
}

const argv = process.argv.slice(2);
await main(argv).catch((error: unknown) => {
  const hint = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? ` (governance ${argv[0] && Object.hasOwn(COMMANDS, argv[0]) ? `${argv[0]} ` : ''}--help)` : '';
  console.error(`governance: ${oneLine(error)}${hint}`);
  process.exitCode = 2;
});
