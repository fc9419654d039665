// The CeilingSource the service uses: the tenant's UNDELIVERED_COMMANDS ceiling from the control plane's
// read model, through the cascade (override -> tier -> platform default -> shipped default), read in the
// enqueue's own transaction.
import { resolveTenantLimit } from '../control-plane/loadEffectiveLimits.ts';
import type { CeilingSource } from './types.ts';

export const controlPlaneCeilings: CeilingSource = async (q, tenantId) => {
  const limit = await resolveTenantLimit(q, tenantId, 'UNDELIVERED_COMMANDS');
  if (!limit) return null;
  // The cascade never resolves to "unlimited": a ceiling is always there. Its absence is a fault, not a pass.
  if (limit.value.ceiling === undefined) throw new Error(`the cascade gave tenant ${tenantId} no UNDELIVERED_COMMANDS ceiling`);
  return { ceiling: limit.value.ceiling, source: limit.source };
};
