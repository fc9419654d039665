// Waits until every projection's checkpoint is at or past `position`: exact, whatever other transactions
// are open on the server (they hold readAll back). Each round asks the runners for a pass, since a
// projection is not woken by events of other types.
import type { Db } from '../../../src/db/db.ts';
import { loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { comparePositions, type Position } from '../../../src/ledger/eventStore.ts';
import type { ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { waitFor } from '../../support/waitFor.ts';

export async function waitForProjected(db: Db, projections: ProjectionSet, position: Position): Promise<void> {
  await waitFor(
    async () => {
      await projections.waitForCaughtUp();
      for (const runner of projections.runners) {
        const checkpoint = (await loadCheckpoint(db, runner.projection.name))?.position;
        if (!checkpoint || checkpoint === 'start' || comparePositions(checkpoint, position) < 0) return false;
      }
      return true;
    },
    { description: 'projections past the append' },
  );
}
