// How long a caller refused at the ceiling should wait before enqueueing again.
//
// A slot frees when command-delivery settles a queued command, so the honest estimate is the time until
// the next delivery: the recent mean interval between deliveries (an exponentially weighted average kept
// on the guard row by every process, so all replicas agree). If the last delivery is already further back
// than that mean, delivery has slowed or stopped, and the time since it is the better lower bound.
// Clamped to 1..60 s: HTTP's Retry-After is whole seconds and at least 1, and beyond a minute a caller
// learns more by asking again than by trusting an extrapolation. With no delivery seen yet there is no
// pace to go on, so a fixed default applies.

export const DEFAULT_RETRY_AFTER_SECONDS = 5;
export const MAX_RETRY_AFTER_SECONDS = 60;

/** Weight of the newest interval in the average: about the last five deliveries dominate. */
export const DELIVERY_INTERVAL_EWMA_WEIGHT = 0.2;

export interface DeliveryPace {
  lastDeliveredAt: Date | null;
  deliveryIntervalMsEwma: number | null;
}

export function retryAfterSeconds(pace: DeliveryPace, now: Date): number {
  if (pace.lastDeliveredAt === null || pace.deliveryIntervalMsEwma === null) return DEFAULT_RETRY_AFTER_SECONDS;
  const sinceLastMs = Math.max(0, now.getTime() - pace.lastDeliveredAt.getTime());
  const expectedWaitMs = Math.max(pace.deliveryIntervalMsEwma, sinceLastMs);
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(expectedWaitMs / 1_000)));
}

/** The average after one more delivery `intervalMs` after the previous one. */
export function nextDeliveryIntervalEwma(previousMs: number | null, intervalMs: number): number {
  if (previousMs === null) return intervalMs;
  return previousMs + DELIVERY_INTERVAL_EWMA_WEIGHT * (intervalMs - previousMs);
}
