// Whether the ledger has registered a tenant, from its stream itself: right after registerTenant this is
// already true, before any projection has caught up.
import { tenantStream } from '../ledger/catalog/controlPlane.ts';
import type { EventStore } from '../ledger/eventStore.ts';

export async function tenantIsRegistered(store: Pick<EventStore, 'readStream'>, tenantId: string): Promise<boolean> {
  const events = await store.readStream(tenantStream(tenantId));
  return events.some((event) => event.type === 'TenantRegistered');
}
