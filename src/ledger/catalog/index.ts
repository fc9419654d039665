// The event catalog: every event type the ledger holds, by domain. Each domain keeps its own file here;
// this index only joins them, so `LedgerEventType` names every type that exists.
import type { AdmissionEventMap } from './admissions.ts';
import type { CommandEventMap } from './commands.ts';
import type { ControlPlaneEventMap } from './controlPlane.ts';
import type { InferenceEventMap } from './inference.ts';
import type { LimitChangeRequestEventMap } from './limitChangeRequests.ts';

export type LedgerEventMap = AdmissionEventMap & CommandEventMap & ControlPlaneEventMap & InferenceEventMap & LimitChangeRequestEventMap;
export type LedgerEventType = keyof LedgerEventMap;
