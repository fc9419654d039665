// LedgerEventRef: an event an answer was folded from, named so an auditor can prove it (ledgerInclusionProof
// takes its eventId; docs/verifiable-ledger.md). The leaf index is read for every ref of a response at once.
import { builder } from '../builder.ts';
import type { LedgerEventRef } from '../../control-plane/index.ts';
import { eventIdsAtPositions, leafIndexesOf } from '../../ledger/index.ts';
import type { Queryable } from '../../db/db.ts';

export const LedgerEventRefType = builder.objectRef<LedgerEventRef>('LedgerEventRef').implement({
  description: 'A ledger event an answer was folded from: prove it with ledgerInclusionProof(eventId).',
  fields: (t) => ({
    eventId: t.exposeID('eventId'),
    position: t.exposeString('position', { description: 'Its position in the ledger (commit:prepare).' }),
    leafIndex: t.loadable({
      type: 'String',
      nullable: true,
      description: "Its leaf in the ledger's Merkle tree, in decimal; null until the tree has taken it (or on a ledger without a tree).",
      load: async (eventIds: string[], context) => {
        const leaves = await leafIndexesOf(context.db, eventIds);
        return eventIds.map((eventId) => (leaves.has(eventId) ? String(leaves.get(eventId)) : null));
      },
      resolve: (ref) => ref.eventId,
    }),
  }),
});

/** The events at read-model positions (a lapse's `:expired` names the event that set the override), in order. */
export async function eventRefsAtPositions(db: Queryable, positions: readonly string[]): Promise<LedgerEventRef[][]> {
  const eventPositions = positions.map((position) => position.replace(/:expired$/, ''));
  const ids = await eventIdsAtPositions(db, eventPositions);
  return eventPositions.map((position) => {
    const eventId = ids.get(position);
    return eventId === undefined ? [] : [{ eventId, position }];
  });
}
