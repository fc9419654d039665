// The steps every door takes, in the order docs/governance-model.md gives (README.md here says more):
//   1. edge check   the instance-level per-client limit, before anything is known of the tenant;
//   2. name         the tenant named by the transport (path, topic, CoAP endpoint), refused when it could never
//                   be a tenant ID, so an invented name costs the Governor no state;
//   3. message      one charge per message before decoding, on the door's INGEST allowance;
//   4. decode       the door's own (JSON readings, uplinks, Sparkplug, SenML...): not a step here;
//   5. readings     the decoded readings charged on the same allowance;
//   6. credential   the sender's key, checked only now, so every check has been paid for;
//      API_REQUESTS one per request with the tenant's policy, after the credential (see chargeApiRequest);
//   7. sink         the accepted batch handed on (NATS JetStream or the counting sink);
//   8. Recorder     not called by a door: the Governor tallies every decision above and its timer hands the
//                   tallies to the Recorder (the ledger and the metrics) in batches.
// Each step returns its outcome as a value; the door turns a refusal into its transport's answer (an HTTP
// 429, an MQTT PUBACK reason code, a CoAP 4.29). The steps never answer and never throw for a refusal.
import { ID_PATTERN } from '../../governance/index.ts';
import type { AdmitDecision, AdmitRequest, Allowance, Dimension, Governor, HeldCharge } from '../../governance/index.ts';
import { authorizeSender, type Destination, type SenderCheck } from './authorizeSender.ts';
import type { CredentialLookup } from './credentialCache.ts';
import type { IngestCredential } from '../../auth/index.ts';
import type { EdgeDecision, EdgeLimit } from './edgeLimit.ts';
import type { AcceptedBatch, ReadingSink, SinkAnswer, SinkRefusal } from './sink.ts';

/** The parts a door's steps use. A door adds its own (a listener, trusted proxies, a body cap). */
export interface DoorParts {
  governor: Governor;
  edgeLimit: EdgeLimit;
  findCredential: CredentialLookup;
  sink: ReadingSink;
}

export type { EdgeDecision };

/** Where and when a message is metered: the tenant, the door's INGEST allowance, its arrival and its client. */
export interface Metering {
  tenantId: string;
  allowance: Allowance;
  atMs: number;
  /** The client key the edge limit used (an address, an IPv6 /64): STABLE_DOWNSAMPLE keys on it. */
  clientKey: string;
}

/** Step 1: the edge per-client limit. */
export function checkEdge(parts: Pick<DoorParts, 'edgeLimit'>, clientKey: string, atMs: number): Readonly<EdgeDecision> {
  return parts.edgeLimit.admit(clientKey, atMs);
}

/** Step 2: true when the name could be a tenant (or integration) ID, the control plane's own rule. */
export function isAcceptableName(name: string): boolean {
  return ID_PATTERN.test(name);
}

// The request each charge below fills and hands to the Governor. The Governor reads it during the call and
// keeps nothing of it, so one record serves every call and a charge allocates nothing; every field is written
// on every call, so no call sees another's.
const charging: AdmitRequest = { tenant: '', dimension: 'INGEST', allowance: null, units: 0, at: 0, callerKey: undefined, charge: undefined };

/**
 * Steps 3 and 5 and API_REQUESTS answer with the Governor's own record of the decision (Governor.decide): read
 * it at once, since the next charge overwrites it.
 */
export type ChargeDecision = Readonly<AdmitDecision>;

/** Step 3: one message, charged before its body is decoded. */
export function chargeMessage(parts: Pick<DoorParts, 'governor'>, metering: Metering): ChargeDecision {
  return parts.governor.decide(fill(metering.tenantId, 'INGEST', metering.allowance, 1, metering.atMs, metering.clientKey, 'message'));
}

/** Step 5: the decoded readings (or uplinks), on the same allowance. */
export function chargeReadings(parts: Pick<DoorParts, 'governor'>, metering: Metering, units: number): ChargeDecision {
  return parts.governor.decide(readingsRequest(metering, units));
}

/** The readings charge's request, whether it is decided at once or held (the same charge either way). */
function readingsRequest(metering: Metering, units: number): AdmitRequest {
  return fill(metering.tenantId, 'INGEST', metering.allowance, units, metering.atMs, metering.clientKey, undefined);
}

function fill(
  tenant: string,
  dimension: Dimension,
  allowance: Allowance | null,
  units: number,
  at: number,
  callerKey: string | undefined,
  charge: AdmitRequest['charge'],
): AdmitRequest {
  charging.tenant = tenant;
  charging.dimension = dimension;
  charging.allowance = allowance;
  charging.units = units;
  charging.at = at;
  charging.callerKey = callerKey;
  charging.charge = charge;
  return charging;
}

/**
 * Step 5 for a door that learns only afterwards whether the readings were taken (the HTTP doors: the
 * credential, API_REQUESTS and the sink come after the charge). Decided as chargeReadings decides; the door
 * settles the held charge with what became of the request (admitted, unauthenticated, withdrawn), and only
 * then is it counted. A refusal is counted at once. Held in the door's own `charge` (one per request, or one
 * settled before), so it allocates nothing.
 */
export function holdReadingsCharge(parts: Pick<DoorParts, 'governor'>, metering: Metering, units: number, charge: HeldCharge): ChargeDecision {
  return parts.governor.hold(readingsRequest(metering, units), charge);
}

/**
 * Step 6: the credential a presented key stands for, when it may post to this destination. Answers at once
 * (no promise) when there is no key or the credential cache knows it, as it does for nearly every request.
 */
export function checkCredential(
  parts: Pick<DoorParts, 'findCredential'>,
  key: string | undefined,
  destination: Destination,
): SenderCheck | Promise<SenderCheck> {
  if (key === undefined || key === '') return authorizeSender(null, destination);
  const known = parts.findCredential.known?.(key);
  if (known !== undefined) return authorizeSender(known, destination);
  return parts.findCredential(key).then((credential) => authorizeSender(credential, destination));
}

/**
 * One API_REQUESTS unit with the tenant's policy (EXACT_REJECT or STABLE_DOWNSAMPLE). Charged after the
 * credential: the Governor keeps state for every name it meters outside the HTTP allowance, so charging an
 * unauthenticated name would let invented names grow it without bound. OpenRUM also charges its project
 * limit after the DSN check.
 */
export function chargeApiRequest(
  parts: Pick<DoorParts, 'governor'>,
  metering: Pick<Metering, 'tenantId' | 'atMs' | 'clientKey'>,
  credential: IngestCredential,
): ChargeDecision {
  return parts.governor.decide(fill(metering.tenantId, 'API_REQUESTS', null, 1, metering.atMs, callerKeyOf(credential, metering.clientKey), undefined));
}

/**
 * Who STABLE_DOWNSAMPLE keeps or drops as a whole: the device or integration a key belongs to, or, for a
 * tenant-wide key that many devices share, the client address.
 */
export function callerKeyOf(credential: IngestCredential, clientKey: string): string {
  return credential.subject !== null ? `${credential.kind}:${credential.subject}` : `ip:${clientKey}`;
}

/**
 * Step 7's outcome: taken (`duplicate` when the sink had taken the same message ID before), refused for its
 * content (permanent: the door answers 413/400 or acknowledges and skips it; the charge counts as rejected),
 * or unavailable (a fault of the sink's: the door answers "retry" or tries again).
 */
export type SinkOutcome =
  | { status: 'accepted'; duplicate: boolean }
  | { status: 'refused'; reason: SinkRefusal; message: string }
  | { status: 'unavailable'; error: unknown };

/** Step 7: the batch handed to the sink. A sink fault is an outcome (the door answers "retry"), never a crash. */
export function handToSink(parts: Pick<DoorParts, 'sink'>, batch: AcceptedBatch): Promise<SinkOutcome> {
  return new Promise((resolve) => handToSinkThen(parts, batch, { sunk: resolve }));
}

/** Takes the sink's outcome in handToSinkThen. It must not throw: it runs in a promise's reaction. */
export interface SinkReceiver {
  sunk(outcome: SinkOutcome): void;
}

/**
 * Step 7 for a door that goes on from a callback rather than awaiting (handToSink is this as a promise): the
 * outcome is handed to `receiver` once the sink answers, without an async function of its own; at once (in
 * this call) when the sink took the batch at once.
 */
export function handToSinkThen(parts: Pick<DoorParts, 'sink'>, batch: AcceptedBatch, receiver: SinkReceiver): void {
  let published: Promise<SinkAnswer> | SinkAnswer;
  try {
    published = parts.sink.publish(batch);
  } catch (error) {
    receiver.sunk({ status: 'unavailable', error });
    return;
  }
  if (!(published instanceof Promise)) {
    receiver.sunk(outcomeOf(published));
    return;
  }
  published.then(
    (answer) => receiver.sunk(outcomeOf(answer)),
    (error: unknown) => receiver.sunk({ status: 'unavailable', error }),
  );
}

/**
 * The most body bytes a door takes: its own cap (INGEST_MAX_BODY_BYTES), or less when the sink takes less
 * (NATS: its max_payload less the envelope), so a body the sink could never take is refused (413, 4.13,
 * dropped) before it is read whole, let alone charged.
 */
export function bodyCapOf(parts: Pick<DoorParts, 'sink'>, configuredBytes: number): number {
  const sinkBytes = parts.sink.maxBodyBytes?.();
  return sinkBytes === undefined ? configuredBytes : Math.min(configuredBytes, sinkBytes);
}

function outcomeOf(answer: SinkAnswer): SinkOutcome {
  if (answer.status === 'stored') return ACCEPTED;
  if (answer.status === 'duplicate') return ACCEPTED_DUPLICATE;
  return answer;
}

const ACCEPTED: SinkOutcome = { status: 'accepted', duplicate: false };
const ACCEPTED_DUPLICATE: SinkOutcome = { status: 'accepted', duplicate: true };
