// In-process publish/subscribe between projections and GraphQL subscriptions. Projections publish from
// afterCommit, so a subscriber is told only what is already committed and readable. One process only:
// every replica runs its own projections and publishes what it applied.
import { createPubSub } from 'graphql-yoga';
import type { AdmissionSummary, Dimension } from '../governance/index.ts';
import type { QuotaThresholdCrossedData } from '../quotas/index.ts';

/** A limit change the history read model just committed, and what it concerns. */
export interface LimitChangeNotice {
  /** Ledger position text (formatPosition) of the event. */
  position: string;
  /** Set for a change to one tenant. */
  tenantId: string | null;
  /** Set for a change to a tier: every tenant on it is affected. */
  tierId: string | null;
  dimension: Dimension | null;
}

export type ApiPubSub = ReturnType<typeof createApiPubSub>;

/**
 * The pub/sub's event target, counting its listeners by event type (`topic` or `topic:id`, as graphql-yoga's
 * pub/sub names them) and by topic: a publisher skips the work of a topic nobody listens to (the sheds
 * publisher would otherwise parse every admission event), and tests wait for a subscriber before publishing.
 */
export class ListenedEventTarget extends EventTarget {
  readonly listeners = new Map<string, number>();
  private readonly byTopic = new Map<string, number>();

  override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: AddEventListenerOptions | boolean): void {
    this.count(type, 1);
    super.addEventListener(type, listener, options);
  }

  override removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: EventListenerOptions | boolean): void {
    this.count(type, -1);
    super.removeEventListener(type, listener, options);
  }

  /** Whether anything listens to the topic, for any id. */
  listening(topic: string): boolean {
    return (this.byTopic.get(topic) ?? 0) > 0;
  }

  private count(type: string, change: number): void {
    this.listeners.set(type, Math.max(0, (this.listeners.get(type) ?? 0) + change));
    const separator = type.indexOf(':');
    const topic = separator < 0 ? type : type.slice(0, separator);
    this.byTopic.set(topic, Math.max(0, (this.byTopic.get(topic) ?? 0) + change));
  }
}

/** The pub/sub's topics and what each carries. */
type ApiTopics = {
  // One topic for all limit changes: a tier or platform-wide change concerns tenants the publisher cannot
  // name, so each subscription decides whether a change concerns its tenant.
  limitChanged: [notice: LimitChangeNotice];
  sheds: [tenantId: string, summary: AdmissionSummary];
  /** A control-plane read model changed: cached effective limits are stale. */
  controlPlaneCommitted: [projection: string];
  /** A quota threshold crossed (QuotaThresholdCrossed), once the webhook outbox has queued it. */
  quotaThresholdCrossed: [tenantId: string, notice: QuotaThresholdCrossedData];
};

export function createApiPubSub(eventTarget = new ListenedEventTarget()) {
  const pubsub = createPubSub<ApiTopics>({ eventTarget });
  return Object.assign(pubsub, { listening: (topic: keyof ApiTopics) => eventTarget.listening(topic) });
}
