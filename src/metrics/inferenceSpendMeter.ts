// Counts the tokens the AI inference provider reports: at once on the instance-wide counters (docs/governance-model.md, "Observing it"),
// and per tenant in the ledger (InferenceSpendRecorded), summed in memory and appended in batches so a
// busy tenant costs one entry per flush rather than one event per request.
//
// A failed append is retried as the same events (same ids) at the same expected revision before anything
// newer is sent: appended at an explicit revision, an id is checked durably by both ledgers (with 'any'
// EventStoreDB only checks a cache of recent ids), so a retry after an append that did commit but whose
// answer was lost counts nothing twice. When another instance appended to the stream first
// (WrongExpectedRevision), the events were not stored at that revision, and they go again at the revision
// the ledger reported. A flush of many tenants is split into appends of at most MAX_APPEND_BYTES, each owed
// in turn. Meanwhile new spend keeps summing per tenant, so memory grows with tenants, not with time.
import { randomUUID } from 'node:crypto';
import { jsonBytes, MAX_APPEND_BYTES, maxEventDataBytes, splitBySize, WrongExpectedRevision, type EventStore, type ExpectedRevision, type NewEvent, INFERENCE_SPEND_STREAM, type InferenceSpendRecordedData, type InferenceSpendSummary } from '../ledger/index.ts';
import type { Metrics } from './metrics.ts';

export type SpendOutcome = { status: 'recorded' } | { status: 'invalid'; field: 'tenantId' | 'inputTokens' | 'outputTokens'; message: string };

export interface InferenceSpendMeter {
  record(tenantId: string, inputTokens: number, outputTokens: number): SpendOutcome;
  /** Appends what has been recorded so far (and any batch still owed from a failed append). */
  flush(): Promise<void>;
  /** Stops the timer and flushes one last time. */
  close(): Promise<void>;
}

export interface InferenceSpendMeterOptions {
  flushIntervalMs?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
  /** The serialized size each append is kept under (MAX_APPEND_BYTES). */
  maxAppendBytes?: number;
}

/** A provider never reports more than this per response; more is a bug upstream, refused rather than counted. */
const MAX_TOKENS_PER_RESPONSE = 100_000_000;

/** Conflicts with other instances' appends tried through in one flush before it fails (and is tried again later). */
const MAX_CONFLICTS = 50;

type SpendEvent = NewEvent<'InferenceSpendRecorded', InferenceSpendRecordedData>;

export function createInferenceSpendMeter(store: EventStore, metrics: Metrics, options: InferenceSpendMeterOptions = {}): InferenceSpendMeter {
  const now = options.now ?? Date.now;
  let pending = new Map<string, InferenceSpendSummary>();
  const maxAppendBytes = options.maxAppendBytes ?? MAX_APPEND_BYTES;
  // Events still to append, in order, each with its id fixed (one event of at most maxAppendBytes per append).
  let owed: SpendEvent[] = [];
  // The revision this meter expects the stream at; unknown until read, or after nothing was appended yet.
  let expected: ExpectedRevision | undefined;
  let flushing: Promise<void> = Promise.resolve();

  const lastRevision = async (): Promise<ExpectedRevision> => {
    const [last] = await store.readStream(INFERENCE_SPEND_STREAM, { direction: 'backwards', maxCount: 1 });
    return last ? last.revision : 'no_stream';
  };

  const appendOwed = async (event: SpendEvent) => {
    for (let conflicts = 0; ; conflicts++) {
      expected ??= await lastRevision();
      try {
        expected = (await store.append(INFERENCE_SPEND_STREAM, [event], { expectedRevision: expected })).nextRevision;
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision) || conflicts >= MAX_CONFLICTS) throw error;
        expected = error.actual;
      }
    }
  };

  const appendPending = async () => {
    if (owed.length === 0 && pending.size > 0) {
      const entries = [...pending.values()];
      pending = new Map();
      const maxEntriesBytes = maxEventDataBytes(undefined, 'InferenceSpendRecorded', maxAppendBytes) - 16;
      owed = splitBySize(entries, (entry) => jsonBytes(entry) + 1, maxEntriesBytes).map((group) => ({
        id: randomUUID(),
        type: 'InferenceSpendRecorded',
        data: { entries: group },
      }));
    }
    while (owed.length > 0) {
      await appendOwed(owed[0]!);
      owed.shift();
    }
    // Spend recorded while that append was in flight goes out now rather than a whole interval later.
    if (pending.size > 0) await appendPending();
  };

  const flush = () => {
    flushing = flushing.then(appendPending, appendPending);
    return flushing;
  };

  const timer = setInterval(() => {
    flush().catch((error: unknown) => options.onError?.(error));
  }, options.flushIntervalMs ?? 1_000);
  timer.unref();

  return {
    record(tenantId, inputTokens, outputTokens) {
      if (typeof tenantId !== 'string' || tenantId.trim() === '') {
        return { status: 'invalid', field: 'tenantId', message: 'tenantId must be a non-empty string' };
      }
      for (const [field, tokens] of [['inputTokens', inputTokens], ['outputTokens', outputTokens]] as const) {
        if (!Number.isInteger(tokens) || tokens < 0 || tokens > MAX_TOKENS_PER_RESPONSE) {
          return { status: 'invalid', field, message: `${field} must be a whole number from 0 to ${MAX_TOKENS_PER_RESPONSE}` };
        }
      }
      metrics.inferenceInputTokens.inc(inputTokens);
      metrics.inferenceOutputTokens.inc(outputTokens);

      const second = Math.floor(now() / 1000);
      const entry = pending.get(tenantId);
      if (!entry) {
        pending.set(tenantId, { tenantId, fromSecond: second, seconds: 1, inputTokens, outputTokens, requests: 1 });
      } else {
        const from = Math.min(entry.fromSecond, second);
        entry.seconds = Math.max(entry.fromSecond + entry.seconds, second + 1) - from;
        entry.fromSecond = from;
        entry.inputTokens += inputTokens;
        entry.outputTokens += outputTokens;
        entry.requests += 1;
      }
      return { status: 'recorded' };
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
