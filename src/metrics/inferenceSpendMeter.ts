// Counts the tokens the AI inference provider reports: at once on the instance-wide counters (the spec),
// and per tenant in the ledger (InferenceSpendRecorded), summed in memory and appended in batches so a
// busy tenant costs one entry per flush rather than one event per request.
//
// A failed append is retried as the same event (same id) before anything newer is sent: the ledger
// stores an id once, so a retry after an append that did commit but whose answer was lost counts nothing
// twice. Meanwhile new spend keeps summing per tenant, so memory grows with tenants, not with time.
import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent } from '../ledger/eventStore.ts';
import { INFERENCE_SPEND_STREAM, type InferenceSpendRecordedData, type InferenceSpendSummary } from '../ledger/catalog/inference.ts';
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
}

/** A provider never reports more than this per response; more is a bug upstream, refused rather than counted. */
const MAX_TOKENS_PER_RESPONSE = 100_000_000;

export function createInferenceSpendMeter(store: EventStore, metrics: Metrics, options: InferenceSpendMeterOptions = {}): InferenceSpendMeter {
  const now = options.now ?? Date.now;
  let pending = new Map<string, InferenceSpendSummary>();
  let owed: NewEvent<'InferenceSpendRecorded', InferenceSpendRecordedData> | undefined;
  let flushing: Promise<void> = Promise.resolve();

  const appendPending = async () => {
    if (!owed && pending.size > 0) {
      owed = { id: randomUUID(), type: 'InferenceSpendRecorded', data: { entries: [...pending.values()] } };
      pending = new Map();
    }
    if (!owed) return;
    await store.append(INFERENCE_SPEND_STREAM, [owed]);
    owed = undefined;
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
