// POST /v1/leases: the exchange of the leasing client (packages/client). One body carries both directions:
//   {leases: [{tenantId, dimension, allowance?, want}], summaries: [{id?, tenantId, dimension, allowance,
//    fromSecond, seconds, admittedUnits, admittedCount, refusedUnits, refusedCount, hitSeconds}]}
//   -> 200 {grants: [{granted, limit, validForMs} | {granted: 0, ..., error: {field, reason}}],
//           summaries: [{recorded: true} | {error: {field, reason}}]}, each in the order sent.
// A grant is decided by a Governor of its own (the lease Governor, no Recorder) on the tenant's configured
// limits: all clients draw their slices from the same buckets and windows, so what they admit together is
// bounded by the limit (packages/client/README.md states the bound). The summaries of what clients admitted
// and refused go to the service's Recorder, the same one the Governor hands its own tallies to, so the
// ledger, trends and /metrics count client decisions like any other. Each summary is checked first
// (leaseSummary.ts: its span, its numbers); a bad one is refused alone and nothing of it is recorded. A
// summary with an id is recorded once however often it comes (README.md). SERVICE (or OPERATOR) token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SLOTS, slotIndexOf } from '../../governance/index.ts';
import type { AdmissionSummary, AdmitRequest, Governor, Recorder } from '../../governance/index.ts';
import { declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';
import { sendJson } from '../../http-server/respond.ts';
import type { Route } from '../../http-server/route.ts';
import type { Logger } from '../../logger.ts';
import { leaseKeyOf, readLeaseSummary, type SummaryError } from './leaseSummary.ts';

export const LEASES_PATH = '/v1/leases';
const MAX_ENTRIES = 1000;
const MAX_BYTES = 1024 * 1024;
const MAX_WANT = 1_000_000;
/**
 * Summary ids this replica recorded lately, remembered so that a summary sent again is not handed to the
 * Recorder again (the ledger would store it once anyway; /metrics would count it twice). A client resends
 * within seconds; the ledger's own check covers the rest.
 */
const REMEMBERED_SUMMARY_IDS = 100_000;

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
    const toRecord: AdmissionSummary[] = [];
    const idsToRemember: string[] = [];
    const outcomes = summaries.map((raw): SummaryOutcome => {
      const read = readLeaseSummary(raw, nowMs);
      if (read.status === 'invalid') return { error: read.error };
      if (read.id !== undefined) {
        // Sent before (recorded here lately, or earlier in this exchange): recorded already.
        if (recentIds.has(read.id) || idsToRemember.includes(read.id)) return RECORDED;
        idsToRemember.push(read.id);
      }
      toRecord.push(read.summary);
      return RECORDED;
    });
    if (toRecord.length > 0) {
      try {
        await deps.recorder.record(toRecord, []);
      } catch (error) {
        // The client keeps the summaries and sends them again (under their ids: nothing is counted twice).
        deps.logger.warn({ err: error }, 'lease summaries not recorded');
        sendJson(res, 503, { error: 'summaries not recorded; send them again' }, ['Retry-After', '1']);
        return;
      }
      for (const id of idsToRemember) remember(id);
    }
    const grants = leases.map((raw) => grantFor(deps.leaseGovernor, request, raw, nowMs));
    sendJson(res, 200, { grants, summaries: outcomes }, []);
  };
  const recentIds = new Set<string>();
  const remember = (id: string) => {
    recentIds.add(id);
    // A Set iterates in insertion order: the oldest id goes first.
    if (recentIds.size > REMEMBERED_SUMMARY_IDS) recentIds.delete(recentIds.values().next().value!);
  };
  return [{ path: LEASES_PATH, handle }];
}

type SummaryOutcome = { recorded: true } | { error: SummaryError };
const RECORDED: SummaryOutcome = { recorded: true };

function grantFor(governor: Governor, request: AdmitRequest, raw: unknown, nowMs: number) {
  const lease = leaseKeyOf(raw);
  if ('field' in lease) return { granted: 0, limit: 0, validForMs: 0, error: lease };
  const want = (raw as { want?: unknown }).want;
  if (typeof want !== 'number' || !Number.isInteger(want) || want < 1 || want > MAX_WANT) {
    return { granted: 0, limit: 0, validForMs: 0, error: { field: 'want', reason: `a whole number from 1 to ${MAX_WANT}` } };
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
