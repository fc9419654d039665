// The auth scopes the schema names. Each one asks src/auth/roles.ts, so the schema says what a field needs
// and roles.ts says who has it.
import type { ApiContext } from '../context.ts';
import { canAuditTenant, canDeliverCommands, canManageIngestKeys, canReadEverything, canReadTenant } from '../../auth/index.ts';

export interface ApiAuthScopes {
  /** Every tenant's limits, tiers, history and trends. */
  readEverything: boolean;
  /** One tenant's limits, overrides and backlog (parameter: tenant id). */
  readTenant: string;
  /** One tenant's history and trends (parameter: tenant id). */
  auditTenant: string;
  /** Enqueue and deliver commands for one tenant (parameter: tenant id). */
  deliverCommands: string;
  /** Issue, list and revoke one tenant's ingest keys (parameter: tenant id). */
  manageIngestKeys: string;
  /** Register webhooks and read their delivery logs: operators only. */
  operate: boolean;
}

export function authScopes({ actor }: ApiContext) {
  return {
    readEverything: canReadEverything(actor),
    readTenant: (tenantId: string) => canReadTenant(actor, tenantId),
    auditTenant: (tenantId: string) => canAuditTenant(actor, tenantId),
    deliverCommands: (tenantId: string) => canDeliverCommands(actor, tenantId),
    manageIngestKeys: (tenantId: string) => canManageIngestKeys(actor, tenantId),
    operate: actor.role === 'OPERATOR',
  };
}
