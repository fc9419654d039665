// Read model: every limit change request (scheduled, or waiting for a second operator) and where it stands,
// with proposer, approver (or rejecter, or withdrawer) and their reasons and times. An unapproved request's
// expiry is not written here (a projection only moves when events arrive): readers compare
// approval_expires_at with the instant they ask. Every change of state is announced to the schedulers of every
// process (src/control-plane/change-requests/scheduler.ts), which arm or drop their timers.
import type { Tx } from '../src/db/db.ts';
import type { LimitChangeFailedData, LimitChangeRequestedData, Projection, RecordedEvent } from '../src/ledger/index.ts';
import { announceScheduleChange, occurredAt, targetOf } from '../src/control-plane/index.ts';

const CLOSING: Record<string, string> = {
  LimitChangeRejected: 'REJECTED',
  LimitChangeWithdrawn: 'WITHDRAWN',
};

export const limitChangeRequestsProjection: Projection = {
  name: 'control-plane-limit-change-requests',
  version: 1,
  eventTypes: ['LimitChangeRequested', 'LimitChangeApproved', 'LimitChangeRejected', 'LimitChangeWithdrawn', 'LimitChangeApplied', 'LimitChangeFailed'],
  tables: ['gl_limit_change_requests'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const at = occurredAt(recorded);
    const actor = typeof recorded.metadata.actor === 'string' ? recorded.metadata.actor : 'unknown';
    const reason = typeof recorded.metadata.reason === 'string' ? recorded.metadata.reason : null;
    const changeId = (recorded.data as { changeId: string }).changeId;
    switch (recorded.type) {
      case 'LimitChangeRequested': {
        const data = recorded.data as LimitChangeRequestedData;
        const target = targetOf(data.planned);
        await tx.query(
          `INSERT INTO gl_limit_change_requests (change_id, command, target_kind, tenant_id, tier_id, dimension, planned,
             effective_from, needs_approval, approval_expires_at, state, proposer, proposer_reason, proposed_at, position)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
           ON CONFLICT (change_id) DO NOTHING`,
          [
            changeId,
            data.command,
            target.kind,
            target.tenantId,
            target.tierId,
            target.dimension,
            JSON.stringify(data.planned),
            data.effectiveFrom,
            data.needsApproval,
            data.approvalExpiresAt,
            data.needsApproval ? 'PENDING_APPROVAL' : 'SCHEDULED',
            actor,
            reason,
            at,
            `${recorded.position.commit}:${recorded.position.prepare}`,
          ],
        );
        break;
      }
      case 'LimitChangeApproved':
        await tx.query(
          `UPDATE gl_limit_change_requests SET state = 'SCHEDULED', decided_by = $2, decision_reason = $3, decided_at = $4 WHERE change_id = $1`,
          [changeId, actor, reason, at],
        );
        break;
      case 'LimitChangeRejected':
      case 'LimitChangeWithdrawn':
        await tx.query(
          'UPDATE gl_limit_change_requests SET state = $2, decided_by = $3, decision_reason = $4, decided_at = $5 WHERE change_id = $1',
          [changeId, CLOSING[recorded.type], actor, reason, at],
        );
        break;
      case 'LimitChangeApplied':
        await tx.query(`UPDATE gl_limit_change_requests SET state = 'APPLIED', applied_at = $2 WHERE change_id = $1 AND state <> 'FAILED'`, [
          changeId,
          at,
        ]);
        break;
      case 'LimitChangeFailed':
        await tx.query(`UPDATE gl_limit_change_requests SET state = 'FAILED', error = $2 WHERE change_id = $1`, [
          changeId,
          (recorded.data as LimitChangeFailedData).error,
        ]);
        break;
      default:
        return;
    }
    await announceScheduleChange(tx, changeId);
  },
};
