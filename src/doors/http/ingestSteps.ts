// Steps both ingest routes (/v1/ingest and /v1/integrations) take the same way once they know the tenant:
// the size cap (413), the X-Device-Key (401), the tenant's API_REQUESTS charge (429) and the sink (202, or 503
// when it fails): the door pipeline's steps (../pipeline/steps.ts) with their HTTP answers. Each answers the
// request itself when it refuses, and says so by returning null or false.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  chargeApiRequest,
  checkCredential,
  handToSink,
  type AcceptedBatch,
  type Destination,
  type SenderCheck,
  type SinkOutcome,
} from '../pipeline/index.ts';
import type { IngestCredential } from '../../auth/index.ts';
import type { AdmitDecision, ChargeOutcome } from '../../governance/index.ts';
import { answer, answerAccepted, answerRateLimited, tenantVerdict, type FrontDoorRequest } from './frontDoor.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import { closeAfterRefusal, declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';

/** The body, or null when it is larger than the cap and was answered 413. */
export async function readBodyWithinCap(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  maxBodyBytes: number,
): Promise<Buffer | null> {
  // A declared length over the cap is refused before a byte is read; a chunked one as soon as it passes the cap.
  const read = declaresTooLarge(req, maxBodyBytes) ? undefined : await readBodyCapped(req, maxBodyBytes);
  if (read?.status === 'read') return read.body;
  answerTooLarge(req, res, deps, entry, tenantId, maxBodyBytes);
  return null;
}

/** 413 for a body over the cap: the rest of it is discarded and the connection closed (closeAfterRefusal). */
export function answerTooLarge(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  maxBodyBytes: number,
): void {
  closeAfterRefusal(req, res, entry.headers);
  answer(res, deps, entry, tenantId, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
}

/**
 * The credential of the X-Device-Key when it may post to this destination, or null when it was answered 401.
 * At once when the key is cached (see checkCredential), else a promise of the same.
 */
export function authorizedCredential(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  destination: Destination,
): IngestCredential | null | Promise<IngestCredential | null> {
  const key = req.headers['x-device-key'];
  const sender = checkCredential(deps, typeof key === 'string' ? key : undefined, destination);
  if (sender instanceof Promise) return sender.then((checked) => credentialOrRefusal(res, deps, entry, destination, checked));
  return credentialOrRefusal(res, deps, entry, destination, sender);
}

function credentialOrRefusal(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  destination: Destination,
  sender: SenderCheck,
): IngestCredential | null {
  if (sender.status === 'unauthorized') {
    entry.headers.push('WWW-Authenticate', 'DeviceKey realm="ingest"');
    answer(res, deps, entry, destination.tenantId, 401, { error: sender.message });
    return null;
  }
  return sender.credential;
}

/** Charges one API_REQUESTS unit with the tenant's policy; false when it was refused and answered 429. */
export function admitApiRequest(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  credential: IngestCredential,
): boolean {
  const request = chargeApiRequest(deps, { tenantId, atMs: entry.atMs, clientKey: entry.client.limitKey }, credential);
  if (!request.admitted) answerRateLimited(res, deps, entry, tenantId, tenantVerdict(request, 'requests'));
  return request.admitted;
}

/**
 * Hands the batch to the sink and answers (answerSinkOutcome); returns what the held readings charge is to be
 * settled with.
 */
export async function publishAccepted(res: ServerResponse, deps: FrontDoorDeps, entry: FrontDoorRequest, batch: AcceptedBatch): Promise<ChargeOutcome> {
  return answerSinkOutcome(res, deps, entry, batch, await handToSink(deps, batch));
}

/**
 * Answers the sink's outcome and says what the held readings charge is to be settled with:
 * - taken: 202 with the units accepted ('admitted'; a retry the sink already held, by its X-Request-ID, is
 *   answered and counted the same, since its first try was withdrawn when it was not answered 202);
 * - refused for its content, which no retry can change: 413 when larger than the pipeline takes, 400 when it
 *   cannot be serialised ('rejected');
 * - the sink failed: 503 with Retry-After ('withdrawn', the retry is counted).
 */
export function answerSinkOutcome(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  batch: AcceptedBatch,
  outcome: SinkOutcome,
): ChargeOutcome {
  if (outcome.status === 'unavailable') {
    const failure = batch.route === 'http' ? 'ingest sink failed' : 'integration sink failed';
    deps.logger.error({ err: outcome.error, requestId: entry.requestId, tenantId: batch.tenantId }, failure);
    entry.headers.push('Retry-After', String(SINK_RETRY_AFTER_SECONDS));
    answer(res, deps, entry, batch.tenantId, 503, { error: 'the reading pipeline is unavailable; retry' });
    return 'withdrawn';
  }
  if (outcome.status === 'refused') {
    answer(res, deps, entry, batch.tenantId, outcome.reason === 'too-large' ? 413 : 400, { error: outcome.message });
    return 'rejected';
  }
  answerAccepted(res, deps, entry, batch.tenantId, batch.units);
  return 'admitted';
}

/** Retry-After on a 503 from the sink, as on every 503 of the service (docs/faults.md). */
const SINK_RETRY_AFTER_SECONDS = 1;

/**
 * 413 for a request larger than the most its tenant's allowance can ever grant (the Governor's `neverFits`):
 * no wait would admit it, so it is not told to retry. The body names the burst and the request's size.
 */
export function answerNeverFits(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  decision: Readonly<AdmitDecision>,
  units: number,
  unitName: 'readings' | 'uplinks',
): void {
  const burst = Math.floor(decision.burst);
  answer(res, deps, entry, tenantId, 413, {
    error: `${units} ${unitName} can never be admitted at once: the tenant's ${unitName === 'readings' ? 'readings' : 'integrations'} burst is ${burst}; send at most ${burst} per request`,
    units,
    burst,
  });
}

