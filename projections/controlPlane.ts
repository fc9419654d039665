// Every control-plane read model, for the service's projection workers and for rebuilds.
import type { Projection } from '../src/ledger/index.ts';
import { limitChangeRequestsProjection } from './limitChangeRequests.ts';
import { limitHistoryProjection } from './limitHistory.ts';
import { platformSettingsProjection } from './platformSettings.ts';
import { tenantOverridesProjection } from './tenantOverrides.ts';
import { createTenantsProjection } from './tenants.ts';
import { tiersProjection } from './tiers.ts';
import type { TenantNameConfirmer } from '../src/control-plane/index.ts';

export function controlPlaneProjections(governor?: TenantNameConfirmer): Projection[] {
  return [tiersProjection, createTenantsProjection(governor), tenantOverridesProjection, platformSettingsProjection, limitHistoryProjection, limitChangeRequestsProjection];
}
