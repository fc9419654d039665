// What the ingest front door needs from the rest of the service. Everything is passed in, so tests and the
// benchmark build a front door from real parts without a whole service.
import type { Logger } from '../../logger.ts';
import type { TrustedProxies } from '../../http-server/trustedProxies.ts';
import type { DoorParts } from '../pipeline/index.ts';

/** The pipeline's parts (Governor, edge limit, credentials, sink) and the HTTP door's own. */
export interface FrontDoorDeps extends DoorParts {
  trustedProxies: TrustedProxies;
  logger: Logger;
  /** Bodies above this get 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** Wall clock (ms) the request is metered at. */
  now?: () => number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
