// Settings come from the environment only; names are fixed by ARCHITECTURE.md.
export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  /** Schema to use on DATABASE_URL (tests and multi-tenant hosting of several ledgers in one database). */
  dbSchema?: string;
  eventStoreUrl?: string;
  redisUrl?: string;
  natsUrl?: string;
  jwtSecret?: string;
  jwksUrl?: string;
  service: string;
  trustedProxyCidrs: string[];
  logLevel: string;
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const optional = (name: string) => (env[name] && env[name]!.trim() !== '' ? env[name]!.trim() : undefined);
  return {
    port: Number.parseInt(env.PORT ?? '4000', 10),
    host: env.HOST ?? '0.0.0.0',
    dataDir: optional('GOVERNANCE_DATA_DIR') ?? './data',
    databaseUrl: optional('DATABASE_URL'),
    dbSchema: optional('GOVERNANCE_DB_SCHEMA'),
    eventStoreUrl: optional('EVENTSTORE_URL'),
    redisUrl: optional('REDIS_URL'),
    natsUrl: optional('NATS_URL'),
    jwtSecret: optional('GOVERNANCE_JWT_SECRET'),
    jwksUrl: optional('GOVERNANCE_JWKS_URL'),
    service: optional('GOVERNANCE_SERVICE') ?? 'governance',
    trustedProxyCidrs: (optional('TRUSTED_PROXY_CIDRS') ?? '')
      .split(',')
      .map((cidr) => cidr.trim())
      .filter(Boolean),
    logLevel: optional('LOG_LEVEL') ?? 'info',
  };
}
