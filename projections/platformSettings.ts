// Read model: the operator-set platform default per dimension, and platform settings (branding.default).
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection } from '../src/ledger/index.ts';
import { announceLimitChange, noteLimitChangeInBase, asControlPlaneEvent, BRANDING_DEFAULT_KEY } from '../src/control-plane/index.ts';

export const platformSettingsProjection: Projection = {
  name: 'control-plane-platform',
  version: 1,
  eventTypes: ['PlatformDefaultSet', 'BrandingDefaultSet'],
  tables: ['gl_platform_defaults', 'gl_platform_settings'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const event = asControlPlaneEvent(recorded);
    switch (event?.type) {
      case 'PlatformDefaultSet':
        await tx.query(
          `INSERT INTO gl_platform_defaults (dimension, value) VALUES ($1, $2)
           ON CONFLICT (dimension) DO UPDATE SET value = EXCLUDED.value`,
          [event.data.dimension, JSON.stringify(event.data.value)],
        );
        await noteLimitChangeInBase(tx, recorded);
        // Every process on the database reads the platform defaults again (src/control-plane/limitChanges.ts).
        await announceLimitChange(tx, { kind: 'platform' });
        return;
      case 'BrandingDefaultSet':
        await tx.query(
          `INSERT INTO gl_platform_settings (key, value) VALUES ($1, $2)
           ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
          [BRANDING_DEFAULT_KEY, JSON.stringify(event.data.branding)],
        );
        return;
    }
  },
};
