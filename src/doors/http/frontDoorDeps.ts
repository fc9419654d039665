// What the ingest front door needs from the rest of the service. Everything is passed in, so tests and the
// benchmark build a front door from real parts without a whole service.
import type { Logger } from '../../logger.ts';
import type { Governor } from '../../governance/governor.ts';
import type { CredentialLookup } from '../pipeline/credentialCache.ts';
import type { EdgeLimit } from '../pipeline/edgeLimit.ts';
import type { ReadingSink } from '../pipeline/sink.ts';
import type { TrustedProxies } from '../../http-server/trustedProxies.ts';

export interface FrontDoorDeps {
  governor: Governor;
  edgeLimit: EdgeLimit;
  trustedProxies: TrustedProxies;
  findCredential: CredentialLookup;
  sink: ReadingSink;
  logger: Logger;
  /** Bodies above this get 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** Wall clock (ms) the request is metered at. */
  now?: () => number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
