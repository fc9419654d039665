// Builds the HTTP ingest door from the parts every door shares (pipeline/startDoorParts.ts) and its own
// settings: trusted proxies for the client address, and the body cap.
import type { Settings } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { Route } from '../../http-server/route.ts';
import { parseTrustedProxies } from '../../http-server/trustedProxies.ts';
import type { DoorParts } from '../pipeline/index.ts';
import { createIngestRoutes } from './routes.ts';

export function startIngest(parts: { settings: Settings; logger: Logger; door: DoorParts }): { routes: Route[] } {
  const { settings, logger, door } = parts;
  const routes = createIngestRoutes({
    ...door,
    trustedProxies: parseTrustedProxies(settings.trustedProxyCidrs),
    logger,
    maxBodyBytes: settings.ingestMaxBodyBytes,
  });
  return { routes };
}
