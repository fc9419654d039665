// Every control-plane read model, for the service's projection workers and for rebuilds.
import type { Projection } from '../ledger/projection.ts';
import { limitHistoryProjection } from '../../projections/limitHistory.ts';
import { platformSettingsProjection } from '../../projections/platformSettings.ts';
import { tenantOverridesProjection } from '../../projections/tenantOverrides.ts';
import { createTenantsProjection } from '../../projections/tenants.ts';
import { tiersProjection } from '../../projections/tiers.ts';
import type { TenantNameConfirmer } from './controlPlane.ts';

export function controlPlaneProjections(governor?: TenantNameConfirmer): Projection[] {
  return [tiersProjection, createTenantsProjection(governor), tenantOverridesProjection, platformSettingsProjection, limitHistoryProjection];
}
