// AI inference spend per tenant: the input and output tokens the provider reported, summed per tenant over
// a span of whole seconds and appended in batches (like admissions), so a busy tenant costs one entry per
// flush, not one event per request.

export const INFERENCE_SPEND_STREAM = 'governance-inference-spend';

export interface InferenceSpendSummary {
  tenantId: string;
  /** Unix seconds of the first second covered. */
  fromSecond: number;
  /** How many seconds the span covers (more than 1 when unflushed spend was merged after a failed append). */
  seconds: number;
  inputTokens: number;
  outputTokens: number;
  /** How many provider responses reported these tokens. */
  requests: number;
}

export interface InferenceSpendRecordedData {
  entries: InferenceSpendSummary[];
}

export type InferenceEventMap = {
  InferenceSpendRecorded: InferenceSpendRecordedData;
};
