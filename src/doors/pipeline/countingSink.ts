// The default sink: counts what was accepted, per tenant. Only authenticated tenants reach a sink, so the
// per-tenant map grows with real tenants, not with names a sender invents.
import { STORED, type AcceptedBatch, type ReadingSink } from './sink.ts';

export interface CountingSink extends ReadingSink {
  readonly totals: { batches: number; units: number };
  readonly unitsByTenant: ReadonlyMap<string, number>;
}

export function createCountingSink(): CountingSink {
  const totals = { batches: 0, units: 0 };
  const unitsByTenant = new Map<string, number>();
  return {
    totals,
    unitsByTenant,
    // Taken at once: nothing to wait for.
    publish(batch: AcceptedBatch) {
      totals.batches += 1;
      totals.units += batch.units;
      unitsByTenant.set(batch.tenantId, (unitsByTenant.get(batch.tenantId) ?? 0) + batch.units);
      return STORED;
    },
    close: () => Promise.resolve(),
  };
}
