// POST /v1/ingest/:tenant, one request from top to bottom in this file: the door pipeline's steps
// (../pipeline/steps.ts) in the order docs/governance-model.md gives ("The order of a door's checks"), each
// answering the request itself when it refuses (the answers are written by answers.ts):
//   1. the edge per-IP limit, before anything is known of the tenant (429, scope ip);
//   2. the tenant name from the path (404 when it could never be a tenant ID), metered on the HTTP allowance
//      (the Governor's confirmed / 1024 / overflow rule);
//   3. one charge per message before decoding (429), then the size cap (413 without reading the body whole);
//   4. decode (400 with what is wrong), then the readings charge (413 when they could never fit the tenant's
//      burst, 429 when they do not fit now);
//   5. the device credential, only now (401);
//   6. API_REQUESTS, one per request with the tenant's policy (429);
//   7. the sink (202; 503 when it fails, 413 or 400 when it refuses the readings for their content).
//
// The readings charge is held until the request's end (Governor.hold): it is counted as admitted only when
// answered 202; a 401 after it is counted apart as unauthenticated; a 429 on API_REQUESTS, a 503 (the sink or
// the key look-up failed) or a fault withdraws it uncounted (the client's retry is counted). The tokens stay
// spent in every case, so the allowance bounds unauthenticated floods and retries alike.
//
// API_REQUESTS is charged after the credential: it is a per-tenant limit with the tenant's own policy
// (EXACT_REJECT or STABLE_DOWNSAMPLE), and the Governor keeps state of its own for every name it meters
// outside the HTTP allowance, so charging it before authentication would let invented names grow that state
// without bound. OpenRUM also charges its project limit after the DSN check.
//
// Every request takes this route, so it goes on from the request's own events (IngestExchange) instead of
// awaiting: steps 1 to 3 run in the handler, the body is decided on in its 'end' event (steps 4 to 6), a
// cached key is checked at once, and only a sink that waits (NATS) answers with a promise (step 7, sunk).
// Faults in those callbacks go to the server's fault answer (RouteFault). The charges allocate nothing: the
// Governor answers with its own decision record (read at once), and the readings charge is held in the
// exchange's HeldCharge.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestTarget, RouteFault, RouteHandler } from '../../http-server/route.ts';
import { addTenantCors } from '../../http-server/rateLimitHeaders.ts';
import { declaresTooLarge, readBodyInto, type BodyReceiver } from '../../http-server/readBody.ts';
import { addChargesLeft, answer, answerNeverFits, answerRateLimited, answerSinkOutcome, answerTooLarge, answerUnauthorized, chargePolicy, edgeVerdict, tenantVerdict, type ChargesLeft } from './answers.ts';
import { frontDoorRequest, type ClientResolver, type FrontDoorRequest } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { namesInPath } from './tenantPath.ts';
import { bodyCapOf, chargeApiRequest, chargeMessage, checkCredential, checkEdge, decodeReadings, handToSinkThen, holdReadingsCharge, type AcceptedBatch, type Metering, type SenderCheck, type SinkOutcome, type SinkReceiver } from '../pipeline/index.ts';
import { HeldCharge, type AdmitDecision, type ChargeOutcome } from '../../governance/index.ts';

export const INGEST_PREFIX = '/v1/ingest/';
const INGEST_PATH_HELP = 'the path must be /v1/ingest/<tenant> with a valid tenant ID';

export function createIngestHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;

  return (req: IncomingMessage, res: ServerResponse, target: RequestTarget, fault: RouteFault) => {
    const entry = frontDoorRequest(req, clients, now);
    // 1. The edge per-IP limit, on the client address (trusted proxies' X-Forwarded-For believed).
    const edge = checkEdge(deps, entry.client.limitKey, entry.atMs);
    if (!edge.admitted) {
      answerRateLimited(res, deps, entry, undefined, edgeVerdict(edge));
      return;
    }
    // 2. The tenant name from the path; its answers may be read by a browser (CORS) from here on.
    const names = namesInPath(target.pathname, INGEST_PREFIX, 1);
    if (names === null) {
      answer(res, deps, entry, undefined, 404, { error: INGEST_PATH_HELP });
      return;
    }
    addTenantCors(entry.headers);
    // 3. One charge per message, then the size cap. The cap follows the sink's (NATS: its max_payload less the
    // envelope), read per request: a NATS server met after a reconnect may take less or more.
    const capBytes = bodyCapOf(deps, maxBodyBytes);
    const exchange = new IngestExchange(req, res, deps, entry, names[0]!, capBytes, fault);
    const message = chargeMessage(deps, exchange);
    if (!message.admitted) {
      answerRateLimited(res, deps, entry, exchange.tenantId, tenantVerdict(message, 'messages'));
      return;
    }
    exchange.keepMessageCharge(message);
    // A declared length over the cap is refused before a byte is read; a chunked one as soon as it passes the
    // cap (bodyTooLarge below).
    if (declaresTooLarge(req, capBytes)) {
      answerTooLarge(req, res, deps, entry, exchange.tenantId, capBytes);
      return;
    }
    readBodyInto(req, capBytes, exchange);
  };
}

/**
 * One request from its message charge on: steps 4 to 7, in the order its events come (bodyRead, then
 * authenticated, then sunk). It is the request's Metering too (tenant, allowance, arrival, client), so no
 * object of its own is made for it.
 */
class IngestExchange implements BodyReceiver, SinkReceiver, Metering, ChargesLeft {
  readonly allowance = 'HTTP';
  readonly atMs: number;
  readonly clientKey: string;
  /** The readings charge, held from the moment it is decided until settle (see the top of this file). */
  private charge: HeldCharge | null = null;
  private entries: readonly Record<string, unknown>[] = [];
  private readingCount = 0;
  private batch: AcceptedBatch | null = null;
  // What the message and readings charges left, for the RateLimit fields of the 202 (ChargesLeft). The
  // numbers start as fractions so V8 gives them their double representation from the start.
  messagePolicy = '';
  messageLimit = 0.5;
  messageRemaining = 0.5;
  messageBurst = 0.5;
  readingsPolicy = '';
  readingsLimit = 0.5;
  readingsRemaining = 0.5;
  readingsBurst = 0.5;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly deps: FrontDoorDeps,
    private readonly entry: FrontDoorRequest,
    readonly tenantId: string,
    private readonly maxBodyBytes: number,
    private readonly fault: RouteFault,
  ) {
    this.atMs = entry.atMs;
    this.clientKey = entry.client.limitKey;
  }

  /** Step 3: keeps what the admitted message charge left (read at once: the decision record is the Governor's). */
  keepMessageCharge(decision: Readonly<AdmitDecision>): void {
    this.messagePolicy = chargePolicy(decision.scope, 'messages');
    this.messageLimit = decision.limit;
    this.messageRemaining = decision.remaining;
    this.messageBurst = decision.burst;
  }

  /** Step 3: a chunked body passed the cap while it streamed. */
  bodyTooLarge(): void {
    try {
      answerTooLarge(this.req, this.res, this.deps, this.entry, this.tenantId, this.maxBodyBytes);
    } catch (error) {
      this.fail(error);
    }
  }

  /** The client went away while its body was read. */
  bodyFailed(error: Error): void {
    this.fail(error);
  }

  bodyRead(body: Buffer): void {
    try {
      this.decide(body);
    } catch (error) {
      this.fail(error);
    }
  }

  private decide(body: Buffer): void {
    const { res, deps, entry, tenantId } = this;
    // 4. Decode, then the readings charge on the same allowance, held until the request ends.
    const decoded = decodeReadings(body);
    if (decoded.status === 'invalid') {
      answer(res, deps, entry, tenantId, 400, { error: decoded.message });
      return;
    }
    const charge = new HeldCharge();
    this.charge = charge;
    const readings = holdReadingsCharge(deps, this, decoded.readingCount, charge);
    if (!readings.admitted) {
      if (readings.neverFits) answerNeverFits(res, deps, entry, tenantId, readings, decoded.readingCount, 'readings');
      else answerRateLimited(res, deps, entry, tenantId, tenantVerdict(readings, 'readings'));
      return;
    }
    this.readingsPolicy = chargePolicy(readings.scope, 'readings');
    this.readingsLimit = readings.limit;
    this.readingsRemaining = readings.remaining;
    this.readingsBurst = readings.burst;
    this.entries = decoded.entries;
    this.readingCount = decoded.readingCount;
    // 5. The device credential (X-Device-Key), only now: every check before it has been paid for. A cached key is
    // checked at once: no turn of the event loop for nearly every request.
    const key = this.req.headers['x-device-key'];
    const sender = checkCredential(deps, typeof key === 'string' ? key : undefined, { route: 'http', tenantId, entries: decoded.entries });
    if (sender instanceof Promise) {
      sender.then(
        (checked) => this.authenticated(checked),
        (error: unknown) => this.fail(error),
      );
      return;
    }
    this.authenticated(sender);
  }

  private authenticated(sender: SenderCheck): void {
    try {
      const { res, deps, entry, tenantId } = this;
      if (sender.status === 'unauthorized') {
        answerUnauthorized(res, deps, entry, tenantId, sender.message);
        this.settle('unauthenticated');
        return;
      }
      const credential = sender.credential;
      // 6. API_REQUESTS, one per request, with the tenant's policy (the caller hashed for STABLE_DOWNSAMPLE is
      // the key's device, or the client address for a tenant key).
      const request = chargeApiRequest(deps, this, credential);
      if (!request.admitted) {
        answerRateLimited(res, deps, entry, tenantId, tenantVerdict(request, 'requests'));
        this.settle('withdrawn');
        return;
      }
      // 7. The sink: its outcome comes to sunk, at once when it took the batch at once.
      const batch: AcceptedBatch = {
        tenantId,
        route: 'http',
        credential: { kind: credential.kind, subject: credential.subject },
        requestId: entry.requestId,
        receivedAtMs: entry.atMs,
        units: this.readingCount,
        items: this.entries,
      };
      this.batch = batch;
      handToSinkThen(deps, batch, this);
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * Step 7's answer (answerSinkOutcome): 202 with the RateLimit fields of what the charges left; 413 or 400 when
   * the sink refused the readings for their content; 503 with Retry-After when it failed. The held charge is
   * settled with what the answer said.
   */
  sunk(outcome: SinkOutcome): void {
    try {
      if (outcome.status === 'accepted') addChargesLeft(this.entry, this);
      this.settle(answerSinkOutcome(this.res, this.deps, this.entry, this.batch!, outcome));
    } catch (error) {
      this.fail(error);
    }
  }

  /** Counts the held readings charge as what became of the request; only the first call counts. */
  private settle(outcome: ChargeOutcome): void {
    this.charge?.settle(outcome);
  }

  /** A fault: the charge is withdrawn uncounted (the client's retry is counted) and the server answers it. */
  private fail(error: unknown): void {
    this.settle('withdrawn');
    this.fault(this.res, error);
  }
}
