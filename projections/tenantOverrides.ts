// Read model: the override last set per tenant and dimension, with when it lapses. Expiry is not applied
// here (a projection only moves when events arrive); readers compare expires_at with the instant they ask.
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection } from '../src/ledger/index.ts';
import { announceLimitChange, noteLimitChangeInBase, asControlPlaneEvent, occurredAt } from '../src/control-plane/index.ts';

export const tenantOverridesProjection: Projection = {
  name: 'control-plane-tenant-overrides',
  version: 1,
  eventTypes: ['TenantOverrideSet', 'TenantOverrideCleared'],
  tables: ['gl_tenant_overrides'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const event = asControlPlaneEvent(recorded);
    switch (event?.type) {
      case 'TenantOverrideSet':
        await tx.query(
          `INSERT INTO gl_tenant_overrides (tenant_id, dimension, value, expires_at, reason, actor, set_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (tenant_id, dimension) DO UPDATE
             SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, reason = EXCLUDED.reason,
                 actor = EXCLUDED.actor, set_at = EXCLUDED.set_at`,
          [
            event.data.tenantId,
            event.data.dimension,
            JSON.stringify(event.data.value),
            event.data.expiresAt,
            recorded.metadata.reason ?? '',
            recorded.metadata.actor ?? '',
            occurredAt(recorded),
          ],
        );
        await noteLimitChangeInBase(tx, recorded);
        // Delivered at this transaction's commit to every process on the database (src/control-plane/limitChanges.ts).
        await announceLimitChange(tx, { kind: 'tenant', tenantId: event.data.tenantId });
        return;
      case 'TenantOverrideCleared':
        await tx.query('DELETE FROM gl_tenant_overrides WHERE tenant_id = $1 AND dimension = $2', [event.data.tenantId, event.data.dimension]);
        await noteLimitChangeInBase(tx, recorded);
        await announceLimitChange(tx, { kind: 'tenant', tenantId: event.data.tenantId });
        return;
    }
  },
};
