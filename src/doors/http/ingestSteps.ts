// Steps both ingest routes (/v1/ingest and /v1/integrations) take the same way once they know the tenant:
// the size cap (413), the X-Device-Key (401), the tenant's API_REQUESTS charge (429) and the sink (202, or 503
// when it fails). Each answers the request itself when it refuses, and says so by returning null or false.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authorizeSender, type Destination } from '../pipeline/authorizeSender.ts';
import type { ClientIp } from '../../http-server/clientIp.ts';
import type { IngestCredential } from '../pipeline/credentials.ts';
import { answer, answerRateLimited, tenantVerdict, type FrontDoorRequest } from './frontDoor.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import { closeAfterRefusal, declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';
import type { AcceptedBatch } from '../pipeline/sink.ts';

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
  closeAfterRefusal(req, res, entry.headers);
  answer(res, deps, entry, tenantId, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
  return null;
}

/** The credential of the X-Device-Key when it may post to this destination, or null when it was answered 401. */
export async function authorizedCredential(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  destination: Destination,
): Promise<IngestCredential | null> {
  const key = req.headers['x-device-key'];
  const credential = typeof key === 'string' && key !== '' ? await deps.findCredential(key) : null;
  const sender = authorizeSender(credential, destination);
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
  const request = deps.governor.admit({
    tenant: tenantId,
    dimension: 'API_REQUESTS',
    units: 1,
    at: entry.atMs,
    callerKey: callerKeyOf(credential, entry.client),
  });
  if (!request.admitted) answerRateLimited(res, deps, entry, tenantId, tenantVerdict(request, 'requests'));
  return request.admitted;
}

/** Hands the batch to the sink and answers 202 with the units accepted, or 503 with Retry-After when the sink fails. */
export async function publishAccepted(res: ServerResponse, deps: FrontDoorDeps, entry: FrontDoorRequest, batch: AcceptedBatch): Promise<void> {
  try {
    await deps.sink.publish(batch);
  } catch (error) {
    const failure = batch.route === 'http' ? 'ingest sink failed' : 'integration sink failed';
    deps.logger.error({ err: error, requestId: entry.requestId, tenantId: batch.tenantId }, failure);
    entry.headers.push('Retry-After', '1');
    return answer(res, deps, entry, batch.tenantId, 503, { error: 'the reading pipeline is unavailable; retry' });
  }
  answer(res, deps, entry, batch.tenantId, 202, { accepted: batch.units });
}

/**
 * Who STABLE_DOWNSAMPLE keeps or drops as a whole: the device or integration a key belongs to, or, for a
 * tenant-wide key that many devices share, the client address.
 */
export function callerKeyOf(credential: IngestCredential, client: ClientIp): string {
  return credential.subject !== null ? `${credential.kind}:${credential.subject}` : `ip:${client.limitKey}`;
}
