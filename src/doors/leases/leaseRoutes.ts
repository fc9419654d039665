// POST /v1/leases: the exchange of the leasing client (packages/client). One body carries both directions:
//   {leases: [{tenantId, dimension, allowance?, want}], summaries: [{tenantId, dimension, allowance, fromSecond,
//    seconds, admittedUnits, admittedCount, refusedUnits, refusedCount, hitSeconds}]}
//   -> 200 {grants: [{granted, limit, validForMs}]} one per lease, in order (granted 0 for a bad lease).
// A grant is decided by a Governor of its own (the lease Governor, no Recorder) on the tenant's configured
// limits: all clients draw their slices from the same buckets and windows, so what they admit together is
// bounded by the limit (packages/client/README.md states the bound). The summaries of what clients admitted
// and refused go to the service's Recorder, the same one the Governor hands its own tallies to, so the
// ledger, trends and /metrics count client decisions like any other. SERVICE (or OPERATOR) token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DIMENSION_CATALOG, ID_PATTERN, slotIndexOf, SLOTS } from '../../governance/index.ts';
import type { AdmissionSummary, AdmitRequest, Allowance, Dimension, Governor, Recorder } from '../../governance/index.ts';
import { declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';
import { sendJson } from '../../http-server/respond.ts';
import type { Route } from '../../http-server/route.ts';
import type { Logger } from '../../logger.ts';

export const LEASES_PATH = '/v1/leases';
const MAX_ENTRIES = 1000;
const MAX_BYTES = 1024 * 1024;
const MAX_WANT = 1_000_000;
/** Summaries older than this are refused as the admission API refuses such an `at`. */
const MAX_SUMMARY_AGE_SECONDS = 7 * 24 * 3600;

export interface LeaseRoutesDeps {
  /** Grants leases; its own instance, without a Recorder (the clients report what they did with the slices). */
  leaseGovernor: Governor;
  recorder: Recorder;
  /** Checks the bearer token: the admission door's callers check. */
  authorize(authorization: string | undefined): Promise<'ok' | 'unauthenticated' | 'forbidden'>;
  logger: Logger;
  now?: () => number;
}

export function createLeaseRoutes(deps: LeaseRoutesDeps): Route[] {
  const now = deps.now ?? Date.now;
  const request: AdmitRequest = { tenant: '', dimension: 'API_REQUESTS', allowance: null, units: 1, at: 0 };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      req.resume();
      sendJson(res, 405, { error: 'POST a lease exchange' }, ['Allow', 'POST']);
      return;
    }
    const caller = await deps.authorize(req.headers.authorization);
    if (caller !== 'ok') {
      req.resume();
      sendJson(res, caller === 'unauthenticated' ? 401 : 403, { error: caller === 'unauthenticated' ? 'a valid bearer token is required' : 'the SERVICE role may lease' }, []);
      return;
    }
    if (declaresTooLarge(req, MAX_BYTES)) {
      req.resume();
      sendJson(res, 413, { error: `an exchange is at most ${MAX_BYTES} bytes` }, ['Connection', 'close']);
      return;
    }
    const read = await readBodyCapped(req, MAX_BYTES);
    if (read.status === 'too-large') {
      sendJson(res, 413, { error: `an exchange is at most ${MAX_BYTES} bytes` }, ['Connection', 'close']);
      return;
    }
    let body: { leases?: unknown; summaries?: unknown };
    try {
      body = JSON.parse(read.body.toString('utf8')) as typeof body;
    } catch {
      sendJson(res, 400, { error: 'the body is not JSON' }, []);
      return;
    }
    const leases = body?.leases ?? [];
    const summaries = body?.summaries ?? [];
    if (!Array.isArray(leases) || !Array.isArray(summaries) || leases.length > MAX_ENTRIES || summaries.length > MAX_ENTRIES) {
      sendJson(res, 400, { error: `leases and summaries are arrays of at most ${MAX_ENTRIES}` }, []);
      return;
    }
    const nowMs = now();
    const recorded: AdmissionSummary[] = [];
    for (const raw of summaries) {
      const summary = admissionSummaryOf(raw, Math.floor(nowMs / 1000));
      if (summary !== null) recorded.push(summary);
    }
    if (recorded.length > 0) {
      try {
        await deps.recorder.record(recorded, []);
      } catch (error) {
        // The client keeps the summaries and sends them again: nothing is lost, nothing counted twice.
        deps.logger.warn({ err: error }, 'lease summaries not recorded');
        sendJson(res, 503, { error: 'summaries not recorded; send them again' }, ['Retry-After', '1']);
        return;
      }
    }
    const grants = leases.map((raw) => grantFor(deps.leaseGovernor, request, raw, nowMs));
    sendJson(res, 200, { grants }, []);
  };
  return [{ path: LEASES_PATH, handle }];
}

function grantFor(governor: Governor, request: AdmitRequest, raw: unknown, nowMs: number) {
  const lease = keyOf(raw);
  const want = (raw as { want?: unknown } | null)?.want;
  if (lease === null || typeof want !== 'number' || !Number.isInteger(want) || want < 1 || want > MAX_WANT) {
    return { granted: 0, limit: 0, validForMs: 0, error: 'tenantId, dimension, allowance and a whole want from 1 to 1,000,000' };
  }
  request.tenant = lease.tenantId;
  request.dimension = lease.dimension;
  request.allowance = lease.allowance;
  request.at = nowMs;
  request.units = want;
  let decision = governor.admit(request);
  let granted = decision.admitted ? want : 0;
  if (!decision.admitted && decision.remaining >= 1) {
    // Less than wanted is left: grant what is.
    request.units = Math.floor(decision.remaining);
    decision = governor.admit(request);
    granted = decision.admitted ? request.units : 0;
  }
  const fixedWindow = SLOTS[slotIndexOf(lease.dimension, lease.allowance)]!.kind === 'FIXED_WINDOW';
  // A fixed window's slice belongs to its second; a token bucket's is good for a second.
  return { granted, limit: decision.limit, validForMs: fixedWindow ? 1000 - (nowMs % 1000) : 1000 };
}

function keyOf(raw: unknown): { tenantId: string; dimension: Dimension; allowance: Allowance | null } | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { tenantId, dimension, allowance } = raw as Record<string, unknown>;
  if (typeof tenantId !== 'string' || !ID_PATTERN.test(tenantId) || typeof dimension !== 'string') return null;
  const named = (allowance ?? null) as Allowance | null;
  if (named !== null && typeof named !== 'string') return null;
  if (!(dimension in DIMENSION_CATALOG) || slotIndexOf(dimension as Dimension, named) < 0) return null;
  return { tenantId, dimension: dimension as Dimension, allowance: named };
}

const count = (value: unknown) => (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 1e12 ? value : null);

/** A client's summary as the Recorder's summary; refusals are shed or rejected as the dimension's behaviour says. */
function admissionSummaryOf(raw: unknown, nowSecond: number): AdmissionSummary | null {
  const key = keyOf(raw);
  if (key === null) return null;
  const s = raw as Record<string, unknown>;
  const fromSecond = count(s.fromSecond);
  const seconds = count(s.seconds);
  const admittedUnits = count(s.admittedUnits);
  const admittedCount = count(s.admittedCount);
  const refusedUnits = count(s.refusedUnits);
  const refusedCount = count(s.refusedCount);
  const hitSeconds = count(s.hitSeconds);
  if (fromSecond === null || seconds === null || seconds < 1 || admittedUnits === null || admittedCount === null) return null;
  if (refusedUnits === null || refusedCount === null || hitSeconds === null) return null;
  if (fromSecond < nowSecond - MAX_SUMMARY_AGE_SECONDS || fromSecond > nowSecond + 60) return null;
  const spec = DIMENSION_CATALOG[key.dimension];
  const behaviour = (key.allowance && spec.overLimitByAllowance[key.allowance]) || spec.overLimit;
  const shed = behaviour === 'SHED' || behaviour === 'DROP_ACCEPTED';
  return {
    tenantId: key.tenantId,
    dimension: key.dimension,
    allowance: key.allowance,
    fromSecond,
    seconds,
    admittedUnits,
    admittedMessages: admittedCount,
    shedUnits: shed ? refusedUnits : 0,
    shedMessages: shed ? refusedCount : 0,
    rejectedUnits: shed ? 0 : refusedUnits,
    rejectedMessages: shed ? 0 : refusedCount,
    hitSeconds: Math.min(hitSeconds, seconds),
  };
}
