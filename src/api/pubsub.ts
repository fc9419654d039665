// In-process publish/subscribe between projections and GraphQL subscriptions. Projections publish from
// afterCommit, so a subscriber is told only what is already committed and readable. One process only:
// every replica runs its own projections and publishes what it applied.
import { createPubSub } from 'graphql-yoga';
import type { AdmissionSummary, Dimension } from '../governance/index.ts';

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

/** `eventTarget` lets a caller observe who listens (tests wait for a subscriber before publishing). */
export function createApiPubSub(eventTarget?: EventTarget) {
  return createPubSub<{
    // One topic for all limit changes: a tier or platform-wide change concerns tenants the publisher cannot
    // name, so each subscription decides whether a change concerns its tenant.
    limitChanged: [notice: LimitChangeNotice];
    sheds: [tenantId: string, summary: AdmissionSummary];
    /** A control-plane read model changed: cached effective limits are stale. */
    controlPlaneCommitted: [projection: string];
  }>({ eventTarget });
}
