// Read model: every defined tier, its limits per dimension and its default AI model.
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection } from '../src/ledger/index.ts';
import { announceLimitChange, noteLimitChangeInBase, asControlPlaneEvent, occurredAt } from '../src/control-plane/index.ts';

export const tiersProjection: Projection = {
  name: 'control-plane-tiers',
  version: 1,
  eventTypes: ['TierDefined', 'TierLimitSet', 'TierLimitCleared', 'TierDefaultModelSet'],
  tables: ['gl_tiers', 'gl_tier_limits'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const event = asControlPlaneEvent(recorded);
    switch (event?.type) {
      case 'TierDefined':
        await tx.query('INSERT INTO gl_tiers (tier_id, name, defined_at) VALUES ($1, $2, $3) ON CONFLICT (tier_id) DO NOTHING', [
          event.data.tierId,
          event.data.name,
          occurredAt(recorded),
        ]);
        return;
      case 'TierLimitSet':
        await tx.query(
          `INSERT INTO gl_tier_limits (tier_id, dimension, value) VALUES ($1, $2, $3)
           ON CONFLICT (tier_id, dimension) DO UPDATE SET value = EXCLUDED.value`,
          [event.data.tierId, event.data.dimension, JSON.stringify(event.data.value)],
        );
        await noteLimitChangeInBase(tx, recorded);
        // Every tenant on the tier, in every process on the database (src/control-plane/limitChanges.ts).
        await announceLimitChange(tx, { kind: 'tier', tierId: event.data.tierId });
        return;
      case 'TierLimitCleared':
        await tx.query('DELETE FROM gl_tier_limits WHERE tier_id = $1 AND dimension = $2', [event.data.tierId, event.data.dimension]);
        await noteLimitChangeInBase(tx, recorded);
        await announceLimitChange(tx, { kind: 'tier', tierId: event.data.tierId });
        return;
      case 'TierDefaultModelSet':
        await tx.query('UPDATE gl_tiers SET default_model = $2 WHERE tier_id = $1', [event.data.tierId, event.data.model]);
        return;
    }
  },
};
