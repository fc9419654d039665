// The admission API: enforcement points in other processes ask the service's Governor, in batches.
//   POST /v1/admissions       {items: [{tenantId, dimension, allowance?, units, at?, callerKey?, charge?}, ...]}
//                             -> 200 {decisions: [{admitted, behaviour, limit, remaining, retryAfterSeconds,
//                                scope, source, quotaExceeded, quotaPeriod} | {error: {field, reason}}, ...]} in the order of
//                                the items (quotaExceeded: refused for the period quota, retryAfterSeconds to its end)
//   POST /v1/inference-usage  {tenantId, inputTokens, outputTokens} or {items: [...]}
//                             -> 200 {results: [{recorded: true} | {error: {field, reason}}, ...]}
// Both need a bearer token of the SERVICE (or OPERATOR) role. There is no per-IP edge limit here: callers are
// the platform's own authenticated services, often many behind one address, and each item is metered by the
// Governor on its tenant's own limits; a batch is bounded (1,000 items, 1 MiB) instead.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ID_PATTERN, InvalidAdmission } from '../../governance/index.ts';
import type { AdmitRequest, Governor } from '../../governance/index.ts';
import type { InferenceSpendMeter } from '../../metrics/index.ts';
import type { Route, RouteHandler } from '../../http-server/route.ts';
import { declaresTooLarge, readBodyCapped } from '../../http-server/readBody.ts';
import { sendJson, sendJsonText } from '../../http-server/respond.ts';
import { readAdmissionItem, type ItemError } from './admissionItem.ts';
import { DecisionTexts } from './decisionText.ts';
import type { CallerCheck, ServiceCallers } from './serviceCallers.ts';

export const ADMISSIONS_PATH = '/v1/admissions';
export const INFERENCE_USAGE_PATH = '/v1/inference-usage';
export const MAX_BATCH_ITEMS = 1000;
export const MAX_BATCH_BYTES = 1024 * 1024;

export interface AdmissionRoutesDeps {
  governor: Governor;
  inferenceSpend: Pick<InferenceSpendMeter, 'record'>;
  callers: ServiceCallers;
  /** The instant an item without `at` is metered at (Unix ms). */
  now?: () => number;
}

export function createAdmissionRoutes(deps: AdmissionRoutesDeps): Route[] {
  const now = deps.now ?? Date.now;
  // Filled per item and handed to the Governor, which copies what it keeps, so one object serves every item.
  const request: AdmitRequest = { tenant: '', dimension: 'EGRESS', allowance: null, units: 0, at: 0, callerKey: undefined, charge: 'readings' };

  // The decisions' texts, made once per distinct decision (decisionText.ts).
  const texts = new DecisionTexts();

  const admitAll = (items: unknown[]): string | Promise<string> => {
    const nowMs = now();
    // With a shared budget (REDIS_URL) the batch's demand is reserved first, so the batch is admitted as far as
    // the shared tokens allow, not as far as the slice this replica happens to hold (one round trip to Redis,
    // only when what is held falls short). Items are read twice: cheaper than keeping a copy of each. Without
    // one (or while it is unreachable) there is nothing to plan, and the items are read once.
    if (deps.governor.plansShared) {
      for (const item of items) if (readAdmissionItem(item, nowMs, request) === null) deps.governor.plan(request);
      const reserving = deps.governor.reservePlanned();
      if (reserving !== null) return reserving.then(() => decideAll(items, nowMs));
    }
    return decideAll(items, nowMs);
  };

  // The answer is written as JSON.stringify would write {decisions: [admit's decision or {error}, ...]}, each
  // decision's text taken from `texts` (Governor.decide: no decision object per item, no object to stringify).
  // It is ASCII throughout, so its length is its byte length (no count of a 16 kB answer's bytes per batch): a
  // decision's fields are numbers and names of ASCII, and an error's text escapes whatever else (asciiJson).
  const decideAll = (items: unknown[], nowMs: number): string => {
    const parts = new Array<string>(items.length);
    for (let i = 0; i < items.length; i++) {
      const error = readAdmissionItem(items[i], nowMs, request);
      if (error !== null) {
        parts[i] = asciiJson({ error });
        continue;
      }
      try {
        parts[i] = texts.textOf(deps.governor.decide(request)).text;
      } catch (fault) {
        // readAdmissionItem checks what admit checks; should they ever disagree the item still gets an answer.
        if (!(fault instanceof InvalidAdmission)) throw fault;
        parts[i] = asciiJson({ error: { field: '', reason: fault.message } });
      }
    }
    return `{"decisions":[${parts.join(',')}]}`;
  };

  const recordAll = (items: unknown[]): string => asciiJson({ results: items.map(recordOne) });
  const recordOne = (raw: unknown): Record<string, unknown> => {
    const error = readUsageItem(raw);
    if (error !== null) return { error };
    const { tenantId, inputTokens, outputTokens } = raw as { tenantId: string; inputTokens: number; outputTokens: number };
    const outcome = deps.inferenceSpend.record(tenantId, inputTokens, outputTokens);
    return outcome.status === 'recorded' ? { recorded: true } : { error: { field: outcome.field, reason: outcome.message } };
  };

  return [
    { path: ADMISSIONS_PATH, handle: batchRoute(deps, (body) => itemsOf(body, false), admitAll) },
    { path: INFERENCE_USAGE_PATH, handle: batchRoute(deps, (body) => itemsOf(body, true), recordAll) },
  ];
}

/** The items of a body, or why the body is not a batch. */
function itemsOf(body: unknown, singleAllowed: boolean): unknown[] | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is a JSON object';
  const items = (body as { items?: unknown }).items;
  if (items === undefined && singleAllowed && 'tenantId' in body) return [body];
  if (!Array.isArray(items)) return singleAllowed ? 'the body is one item or {"items": [...]}' : 'the body is {"items": [...]}';
  if (items.length === 0) return 'items is empty';
  if (items.length > MAX_BATCH_ITEMS) return `at most ${MAX_BATCH_ITEMS} items per batch`;
  return items;
}

/** JSON.stringify's text with every character past ASCII written as a \u escape (the same JSON value). */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A batch route: the caller checked, the body read and parsed, its items answered by `decide`, whose answer is
 * JSON in ASCII only (asciiJson), so its length is its byte length.
 */
function batchRoute(deps: AdmissionRoutesDeps, read: (body: unknown) => unknown[] | string, decide: (items: unknown[]) => string | Promise<string>): RouteHandler {
  return async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') {
      req.resume();
      sendJson(res, 405, { error: `${req.method ?? 'this method'} is not allowed; POST a batch` }, ['Allow', 'POST']);
      return;
    }
    const checked = deps.callers.check(req.headers.authorization);
    const caller = checked instanceof Promise ? await checked : checked;
    if (caller.status !== 'ok') return refuseCaller(req, res, caller);
    if (declaresTooLarge(req, MAX_BATCH_BYTES)) return tooLarge(req, res);
    const bodyRead = await readBodyCapped(req, MAX_BATCH_BYTES);
    if (bodyRead.status === 'too-large') return tooLarge(req, res);
    let body: unknown;
    try {
      body = JSON.parse(bodyRead.body.toString('utf8'));
    } catch {
      sendJson(res, 400, { error: 'the body is not JSON' }, []);
      return;
    }
    const items = read(body);
    if (typeof items === 'string') {
      sendJson(res, 400, { error: items }, []);
      return;
    }
    const decided = decide(items);
    const answer = decided instanceof Promise ? await decided : decided;
    sendJsonText(res, 200, answer, []);
  };
}

function refuseCaller(req: IncomingMessage, res: ServerResponse, caller: Exclude<CallerCheck, { status: 'ok' }>): void {
  req.resume();
  if (caller.status === 'unauthenticated') {
    sendJson(res, 401, { error: 'a valid bearer token is required' }, ['WWW-Authenticate', 'Bearer']);
  } else {
    sendJson(res, 403, { error: `the ${caller.actor.role} role may not ask for admissions; SERVICE may` }, []);
  }
}

function tooLarge(req: IncomingMessage, res: ServerResponse): void {
  // The rest of the body is discarded unread and the connection closed, as the ingest door does.
  req.resume();
  res.once('finish', () => setTimeout(() => req.socket.destroy(), 2_000).unref());
  sendJson(res, 413, { error: `a batch is at most ${MAX_BATCH_BYTES} bytes` }, ['Connection', 'close']);
}

/** As the spend meter's bound: a provider never reports more per response. */
const MAX_TOKENS = 100_000_000;

function readUsageItem(raw: unknown): ItemError | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { field: '', reason: 'an item is a JSON object' };
  const item = raw as Record<string, unknown>;
  if (typeof item.tenantId !== 'string' || !ID_PATTERN.test(item.tenantId)) {
    return { field: 'tenantId', reason: 'a tenant ID: a letter or digit, then up to 63 letters, digits, _ . : or -' };
  }
  for (const field of ['inputTokens', 'outputTokens'] as const) {
    const tokens = item[field];
    if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0 || tokens > MAX_TOKENS) {
      return { field, reason: `a whole number from 0 to ${MAX_TOKENS}` };
    }
  }
  return null;
}
