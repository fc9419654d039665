// POST /v1/ingest/:tenant: the door pipeline's steps (../pipeline/steps.ts) in the order docs/governance-model.md gives:
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
//
// Every request takes this route, so it goes on from the request's own events (IngestExchange) instead of
// awaiting: the body is decided on in its 'end' event, a cached key is checked at once, and only a sink that
// waits (NATS) answers with a promise. Faults in those callbacks go to the server's fault answer (RouteFault).
// The charges allocate nothing: the Governor answers with its own decision record (read at once), and the
// readings charge is held in the exchange's HeldCharge.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestTarget, RouteFault, RouteHandler } from '../../http-server/route.ts';
import { declaresTooLarge, readBodyInto, type BodyReceiver } from '../../http-server/readBody.ts';
import { addChargesLeft, answer, chargePolicy, answerRateLimited, enterTenantPath, tenantVerdict, type ChargesLeft, type ClientResolver, type FrontDoorRequest } from './frontDoor.ts';
import { DEFAULT_MAX_BODY_BYTES, type FrontDoorDeps } from './frontDoorDeps.ts';
import { admitApiRequest, answerNeverFits, answerSinkOutcome, answerTooLarge, authorizedCredential } from './ingestSteps.ts';
import { decodeReadings } from '../pipeline/readings.ts';
import { bodyCapOf, chargeMessage, handToSinkThen, holdReadingsCharge, type AcceptedBatch, type Metering, type SinkOutcome, type SinkReceiver } from '../pipeline/index.ts';
import type { IngestCredential } from '../../auth/index.ts';
import { HeldCharge, type AdmitDecision, type ChargeOutcome } from '../../governance/index.ts';

export const INGEST_PREFIX = '/v1/ingest/';
const INGEST_PATH = { prefix: INGEST_PREFIX, count: 1, help: 'the path must be /v1/ingest/<tenant> with a valid tenant ID' };

export function createIngestHandler(deps: FrontDoorDeps, clients: ClientResolver): RouteHandler {
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = deps.now ?? Date.now;

  return (req: IncomingMessage, res: ServerResponse, target: RequestTarget, fault: RouteFault) => {
    const entered = enterTenantPath(req, res, target, deps, clients, now, INGEST_PATH);
    if (entered === null) return;
    // The cap follows the sink's (NATS: its max_payload less the envelope), read per request: a NATS server
    // met after a reconnect may take less or more.
    const capBytes = bodyCapOf(deps, maxBodyBytes);
    const exchange = new IngestExchange(req, res, deps, entered.entry, entered.names[0]!, capBytes, fault);
    const message = chargeMessage(deps, exchange);
    if (!message.admitted) {
      answerRateLimited(res, deps, entered.entry, exchange.tenantId, tenantVerdict(message, 'messages'));
      return;
    }
    exchange.keepMessageCharge(message);
    // A declared length over the cap is refused before a byte is read; a chunked one as soon as it passes the cap.
    if (declaresTooLarge(req, capBytes)) {
      answerTooLarge(req, res, deps, entered.entry, exchange.tenantId, capBytes);
      return;
    }
    readBodyInto(req, capBytes, exchange);
  };
}

/**
 * One request from its message charge on: steps 3 to 7, each answering the request itself when it refuses.
 * It is the request's Metering too (tenant, allowance, arrival, client), so no object of its own is made for it.
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

  /** Keeps what the admitted message charge left (read at once: the decision record is the Governor's). */
  keepMessageCharge(decision: Readonly<AdmitDecision>): void {
    this.messagePolicy = chargePolicy(decision.scope, 'messages');
    this.messageLimit = decision.limit;
    this.messageRemaining = decision.remaining;
    this.messageBurst = decision.burst;
  }

  bodyRead(body: Buffer): void {
    try {
      this.decide(body);
    } catch (error) {
      this.fail(error);
    }
  }

  bodyTooLarge(): void {
    try {
      answerTooLarge(this.req, this.res, this.deps, this.entry, this.tenantId, this.maxBodyBytes);
    } catch (error) {
      this.fail(error);
    }
  }

  bodyFailed(error: Error): void {
    this.fail(error);
  }

  sunk(outcome: SinkOutcome): void {
    try {
      if (outcome.status === 'accepted') addChargesLeft(this.entry, this);
      this.settle(answerSinkOutcome(this.res, this.deps, this.entry, this.batch!, outcome));
    } catch (error) {
      this.fail(error);
    }
  }

  private decide(body: Buffer): void {
    const { res, deps, entry, tenantId } = this;
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
    const checked = authorizedCredential(this.req, res, deps, entry, { route: 'http', tenantId, entries: decoded.entries });
    // A cached key is checked at once: no turn of the event loop for nearly every request.
    if (checked instanceof Promise) {
      checked.then(
        (credential) => this.authenticated(credential),
        (error: unknown) => this.fail(error),
      );
      return;
    }
    this.authenticated(checked);
  }

  private authenticated(credential: IngestCredential | null): void {
    try {
      if (credential === null) {
        this.settle('unauthenticated');
        return;
      }
      const { deps, entry, tenantId } = this;
      if (!admitApiRequest(this.res, deps, entry, tenantId, credential)) {
        this.settle('withdrawn');
        return;
      }
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
