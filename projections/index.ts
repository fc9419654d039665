// Every read model the service keeps, for the projection workers and for `governance projections rebuild`.
import type { Projection } from '../src/ledger/index.ts';
import type { TenantNameConfirmer } from '../src/control-plane/index.ts';
import { controlPlaneProjections } from './controlPlane.ts';
import { commandBacklogProjection } from './commandBacklog.ts';
import { commandListProjection } from './commandList.ts';
import { admissionTrendsProjection } from './admissionTrends.ts';
import { admissionDemandProjection } from './admissionDemand.ts';
import { unresolvedAdmissionsProjection } from './unresolvedAdmissions.ts';
import { inferenceSpendProjection } from './inferenceSpend.ts';
import { webhookOutboxProjection } from '../src/webhooks/index.ts';

export interface ProjectionDependencies {
  /** Told of every registered tenant, so its HTTP name has its own allowance. */
  governor?: TenantNameConfirmer;
}

export function allProjections(dependencies: ProjectionDependencies = {}): Projection[] {
  return [
    ...controlPlaneProjections(dependencies.governor),
    commandBacklogProjection,
    commandListProjection,
    admissionTrendsProjection,
    admissionDemandProjection,
    unresolvedAdmissionsProjection,
    inferenceSpendProjection,
    webhookOutboxProjection,
  ];
}
export { projectionWorkers } from './workerProjections.ts';
