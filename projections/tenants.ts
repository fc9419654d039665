// Read model: every registered tenant with its tier, AI model assignment, branding and API over-limit
// policy. After each committed batch it confirms newly registered names to the Governor, so a name the
// control plane registered (in any process) gets an allowance of its own in this one.
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection } from '../src/ledger/index.ts';
import type { TenantNameConfirmer } from '../src/control-plane/index.ts';
import { announceLimitChange, asControlPlaneEvent, occurredAt } from '../src/control-plane/index.ts';

export function createTenantsProjection(governor?: TenantNameConfirmer): Projection {
  return {
    name: 'control-plane-tenants',
    version: 1,
    eventTypes: ['TenantRegistered', 'TenantTierAssigned', 'TenantModelAssigned', 'TenantBrandingSet', 'TenantOverLimitPolicySet'],
    tables: ['gl_tenants'],
    async apply(recorded: RecordedEvent, tx: Tx) {
      const event = asControlPlaneEvent(recorded);
      switch (event?.type) {
        case 'TenantRegistered':
          await tx.query(
            'INSERT INTO gl_tenants (tenant_id, tier_id, registered_at) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING',
            [event.data.tenantId, event.data.tierId, occurredAt(recorded)],
          );
          // Every process on this database reads the new tenant's ceilings now (src/control-plane/limitChanges.ts).
          await announceLimitChange(tx, { kind: 'tenant', tenantId: event.data.tenantId });
          return;
        case 'TenantTierAssigned':
          await tx.query('UPDATE gl_tenants SET tier_id = $2 WHERE tenant_id = $1', [event.data.tenantId, event.data.tierId]);
          await announceLimitChange(tx, { kind: 'tenant', tenantId: event.data.tenantId });
          return;
        case 'TenantModelAssigned':
          await tx.query('UPDATE gl_tenants SET model = $2 WHERE tenant_id = $1', [event.data.tenantId, event.data.model]);
          return;
        case 'TenantBrandingSet':
          await tx.query('UPDATE gl_tenants SET branding = $2 WHERE tenant_id = $1', [
            event.data.tenantId,
            event.data.branding === null ? null : JSON.stringify(event.data.branding),
          ]);
          return;
        case 'TenantOverLimitPolicySet':
          await tx.query('UPDATE gl_tenants SET api_over_limit_policy = $2 WHERE tenant_id = $1', [event.data.tenantId, event.data.policy]);
          await announceLimitChange(tx, { kind: 'tenant', tenantId: event.data.tenantId });
          return;
      }
    },
    afterCommit(events) {
      if (!governor) return;
      for (const recorded of events) {
        const event = asControlPlaneEvent(recorded);
        if (event?.type === 'TenantRegistered') governor.confirmTenant(event.data.tenantId);
      }
    },
  };
}
