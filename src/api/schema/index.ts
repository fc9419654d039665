// Imports every type file (each registers its types and fields on the builder) and builds the schema.
import { builder } from '../builder.ts';
import './scalars.ts';
import { REFUSAL_RULE } from './errors.ts';
import './enums.ts';
import './errors.ts';
import './limitValue.ts';
import './effectiveLimit.ts';
import './tier.ts';
import './override.ts';
import './commandBacklog.ts';
import './tenant.ts';
import './cascade.ts';
import './tenantSettings.ts';
import './limitHistory.ts';
import './effectiveLimitTimeline.ts';
import './trends.ts';
import './limitChangePreview.ts';
import './limitMutations.ts';
import './limitChangeRequests.ts';
import './settingMutations.ts';
import './commandMutations.ts';
import './commandList.ts';
import './ingestKeys.ts';
import './subscriptions.ts';
import './viewer.ts';
import './ledgerProofs.ts';
import './quotaNotices.ts';

builder.queryType({ description: REFUSAL_RULE });

export const schema = builder.toSchema({ sortSchema: true });
