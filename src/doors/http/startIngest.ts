// Builds the ingest front door from the service's settings and parts: the sink (NATS JetStream when NATS_URL
// is set, otherwise the counting sink), the edge per-IP limit, trusted proxies and the credential store.
import type { Settings } from '../../config.ts';
import type { Db } from '../../db/db.ts';
import type { Governor } from '../../governance/governor.ts';
import type { Logger } from '../../logger.ts';
import type { Route } from '../../http-server/route.ts';
import { createCountingSink } from '../pipeline/countingSink.ts';
import { cachedCredentialLookup } from '../pipeline/credentialCache.ts';
import { findIngestCredential } from '../pipeline/credentials.ts';
import { createEdgeLimit } from '../pipeline/edgeLimit.ts';
import { createNatsSink, DEFAULT_INGEST_STREAM } from '../pipeline/natsSink.ts';
import { createIngestRoutes } from './routes.ts';
import type { ReadingSink } from '../pipeline/sink.ts';
import { parseTrustedProxies } from '../../http-server/trustedProxies.ts';

export interface IngestFrontDoor {
  routes: Route[];
  sink: ReadingSink;
  close(): Promise<void>;
}

export async function startIngest(parts: { settings: Settings; db: Db; governor: Governor; logger: Logger }): Promise<IngestFrontDoor> {
  const { settings, db, governor, logger } = parts;
  const sink = settings.natsUrl
    ? await createNatsSink({ url: settings.natsUrl, ...DEFAULT_INGEST_STREAM })
    : createCountingSink();
  logger.info({ sink: settings.natsUrl ? 'nats-jetstream' : 'counting' }, 'ingest front door ready');
  const routes = createIngestRoutes({
    governor,
    edgeLimit: createEdgeLimit({ ratePerSecond: settings.edgeIpRatePerSecond }),
    trustedProxies: parseTrustedProxies(settings.trustedProxyCidrs),
    findCredential: cachedCredentialLookup((key) => findIngestCredential(db, key)),
    sink,
    logger,
    maxBodyBytes: settings.ingestMaxBodyBytes,
  });
  return { routes, sink, close: () => sink.close() };
}
