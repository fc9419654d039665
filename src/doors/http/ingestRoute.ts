// POST /v1/ingest/:tenant: the door pipeline's steps (../pipeline/steps.ts) in the spec's order:
//   1. edge per-IP limit (frontDoor.ts);
//   2. the tenant name from the path on the HTTP allowance (the Governor's confirmed / 1024 / overflow rule)
//   3. charged once per message before decoding, then the size cap (413 without reading the body whole);
//   4. decode (400 with what is wrong), then the readings are charged (413 when they could never fit the
//      tenant's burst, 429 when they do not fit now);
//   5. the device credential, only now (401);
//   then API_REQUESTS (see below), and 6. the sink (202).
//
// The readings charge is held until the request's end (Governor.chargeUntilSettled): it is counted as admitted
// only when answered 202; a 401 after it is counted apart as unauthenticated; a 429 on API_REQUESTS, a 503
// (the sink or the key look-up failed) or a fault withdraws it uncounted (the client's retry is counted). The
// tokens stay spent in every case, so the allowance bounds unauthenticated floods and retries alike.
//
// API_REQUESTS is charged once per request, after the credential: it is a per-tenant limit with the tenant's
// own policy (EXACT_REJECT or STABLE_DOWNSAMPLE), and the Governor keeps state of its own for every name it
// meters outside the HTTP allowance, so charging it before authentication would let invented names grow
// that state without bound. OpenRUM also charges its project limit after the DSN check.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestTarget, RouteHandler } from '../../http-server/route.ts';
import { answer, answerRateLimited, enterTenantPath, tenantVerdict, type ClientResolver } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { admitApiRequest, answerNeverFits, authorizedCredential, publishAccepted, readBodyWithinCap } from './ingestSteps.ts';
import { decodeReadings } from '../pipeline/readings.ts';
import { chargeMessage, holdReadingsCharge, type Metering } from '../pipeline/index.ts';
import type { ChargeOutcome } from '../../governance/index.ts';

export const INGEST_PREFIX = '/v1/ingest/';
const INGEST_PATH = { prefix: INGEST_PREFIX, count: 1, help: 'the path must be /v1/ingest/<tenant> with a valid tenant ID' };

export function createIngestHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;

  return async (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => {
    const entered = enterTenantPath(req, res, target, deps, clients, now, INGEST_PATH);
    if (entered === null) return;
    const { entry, names } = entered;
    const { requestId, client, atMs } = entry;
    const tenantId = names[0]!;

    const metering: Metering = { tenantId, allowance: 'HTTP', atMs, clientKey: client.limitKey };
    const message = chargeMessage(deps, metering);
    if (!message.admitted) {
      return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(message, 'messages'));
    }

    const body = await readBodyWithinCap(req, res, deps, entry, tenantId, maxBodyBytes);
    if (body === null) return;
    const decoded = decodeReadings(body);
    if (decoded.status === 'invalid') return answer(res, deps, entry, tenantId, 400, { error: decoded.message });

    const charge = holdReadingsCharge(deps, metering, decoded.readingCount);
    const readings = charge.decision;
    if (!readings.admitted) {
      if (readings.neverFits) return answerNeverFits(res, deps, entry, tenantId, readings, decoded.readingCount, 'readings');
      return answerRateLimited(res, deps, entry, tenantId, tenantVerdict(readings, 'readings'));
    }

    let outcome: ChargeOutcome = 'withdrawn';
    try {
      const checked = authorizedCredential(req, res, deps, entry, { route: 'http', tenantId, entries: decoded.entries });
      // A cached key is checked at once: no turn of the event loop for nearly every request.
      const credential = checked instanceof Promise ? await checked : checked;
      if (credential === null) {
        outcome = 'unauthenticated';
        return;
      }
      if (!admitApiRequest(res, deps, entry, tenantId, credential)) return;

      const taken = await publishAccepted(res, deps, entry, {
        tenantId,
        route: 'http',
        credential: { kind: credential.kind, subject: credential.subject },
        requestId,
        receivedAtMs: atMs,
        units: decoded.readingCount,
        items: decoded.entries,
      });
      if (taken) outcome = 'admitted';
    } finally {
      charge.settle(outcome);
    }
  };
}

