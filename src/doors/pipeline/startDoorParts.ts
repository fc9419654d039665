// Builds the parts every door shares from the service's settings: one sink (NATS JetStream when NATS_URL is
// set, otherwise the counting sink), one edge per-client limit and one credential lookup. Doors share them so
// a client has one edge allowance whichever door it uses, and accepted readings go to one place.
import type { Settings } from '../../config.ts';
import type { Db } from '../../db/db.ts';
import type { Governor } from '../../governance/index.ts';
import type { Logger } from '../../logger.ts';
import { createCountingSink } from './countingSink.ts';
import { cachedCredentialLookup } from './credentialCache.ts';
import { findIngestCredential } from '../../auth/index.ts';
import { createEdgeLimit } from './edgeLimit.ts';
import type { DoorParts } from './steps.ts';

export interface SharedDoorParts extends DoorParts {
  /** Closes the sink; call it after every door has stopped taking messages. */
  close(): Promise<void>;
}

export async function startDoorParts(parts: { settings: Settings; db: Db; governor: Governor; logger: Logger }): Promise<SharedDoorParts> {
  const { settings, db, governor, logger } = parts;
  // The NATS client is loaded only when NATS_URL is set: it would otherwise cost every start.
  const nats = settings.natsUrl ? await import('./natsSink.ts') : undefined;
  const sink = nats && settings.natsUrl ? await nats.createNatsSink({ url: settings.natsUrl, replicas: settings.natsReplicas, ...nats.DEFAULT_INGEST_STREAM, logger }) : createCountingSink();
  logger.info({ sink: settings.natsUrl ? 'nats-jetstream' : 'counting' }, 'door sink ready');
  // Without NATS_URL accepted readings are counted and then dropped: an operator who forgot the setting must
  // hear it once at start-up, not find out from a downstream consumer that saw nothing.
  if (!settings.natsUrl) logger.warn({ sink: 'counting' }, 'NATS_URL is not set: accepted ingest readings are counted and discarded, not delivered anywhere');
  return {
    governor,
    edgeLimit: createEdgeLimit({ ratePerSecond: settings.edgeIpRatePerSecond }),
    findCredential: cachedCredentialLookup((key) => findIngestCredential(db, key)),
    sink,
    close: () => sink.close(),
  };
}
