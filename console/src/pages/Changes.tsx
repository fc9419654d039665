// Limit changes that did not apply at once: the queue of changes waiting for a second operator (approve or
// reject, with a reason; the viewer's own proposals are shown as not approvable by them), and the scheduled
// changes not yet in force (withdraw). The API decides who may do what; the page only mirrors it.
import { useState } from 'preact/hooks';
import { canEdit, describePayload, formatLimit, gql, mutate, type LimitValue, type Viewer } from '../api.ts';
import { useLoad } from '../hooks.ts';

interface Request {
  changeId: string;
  command: string;
  state: string;
  tenantId: string | null;
  tierId: string | null;
  dimension: string;
  mode: 'ENFORCE' | 'SHADOW';
  value: LimitValue | null;
  previous: LimitValue | null;
  effectiveFrom: string;
  approvalExpiresAt: string | null;
  proposer: string;
  proposerReason: string | null;
  proposedAt: string;
  approvableByViewer: boolean;
}

const VALUE = '{ ratePerSecond burst ceiling }';
const REQUESTS = `query ($states: [LimitChangeRequestState!]) {
  limitChangeRequests(states: $states, first: 100) {
    changeId command state tenantId tierId dimension mode value ${VALUE} previous ${VALUE} effectiveFrom approvalExpiresAt
    proposer proposerReason proposedAt approvableByViewer
  }
}`;

const target = (request: Request) => (request.tenantId ? `tenant ${request.tenantId}` : request.tierId ? `tier ${request.tierId}` : 'platform');
const change = (request: Request) =>
  `${request.mode === 'SHADOW' ? 'shadow (refuses nothing): ' : ''}${formatLimit(request.previous)} → ${request.value ? formatLimit(request.value) : 'cleared'}`;

export function Changes({ viewer }: { viewer: Viewer }) {
  const pending = useLoad(() => gql<{ limitChangeRequests: Request[] }>(REQUESTS, { states: ['PENDING_APPROVAL'] }), []);
  const scheduled = useLoad(() => gql<{ limitChangeRequests: Request[] }>(REQUESTS, { states: ['SCHEDULED'] }), []);
  const [message, setMessage] = useState<string>();
  const reload = () => {
    pending.reload();
    scheduled.reload();
  };
  async function decide(name: 'approveLimitChange' | 'rejectLimitChange' | 'withdrawLimitChange', changeId: string, reason: string) {
    const payload = await mutate(name, { changeId, ...(reason ? { reason } : {}) }, 'LimitChangeDecisionInput');
    setMessage(describePayload(payload));
    reload();
  }
  return (
    <section aria-labelledby="changes-title">
      <h1 id="changes-title">Limit changes</h1>
      {message && <p role="status">{message}</p>}
      <h2 id="queue-title">Waiting for approval</h2>
      {pending.error && <p role="alert" class="error">{pending.error}</p>}
      {pending.data?.limitChangeRequests.length === 0 && <p>No change waits for approval.</p>}
      <ul class="plain" aria-labelledby="queue-title" data-testid="approval-queue">
        {pending.data?.limitChangeRequests.map((request) => (
          <RequestCard request={request} key={request.changeId}>
            {canEdit(viewer) && (
              <Decision
                request={request}
                actions={[
                  ['Approve', 'approveLimitChange', request.approvableByViewer],
                  ['Reject', 'rejectLimitChange', true],
                ]}
                note={request.approvableByViewer ? null : 'You proposed this change: another operator approves it.'}
                onDecide={decide}
              />
            )}
          </RequestCard>
        ))}
      </ul>
      <h2 id="scheduled-title">Scheduled</h2>
      {scheduled.error && <p role="alert" class="error">{scheduled.error}</p>}
      {scheduled.data?.limitChangeRequests.length === 0 && <p>No change is scheduled.</p>}
      <ul class="plain" aria-labelledby="scheduled-title" data-testid="scheduled-changes">
        {scheduled.data?.limitChangeRequests.map((request) => (
          <RequestCard request={request} key={request.changeId}>
            {canEdit(viewer) && <Decision request={request} actions={[['Withdraw', 'withdrawLimitChange', true]]} note={null} onDecide={decide} />}
          </RequestCard>
        ))}
      </ul>
    </section>
  );
}

function RequestCard({ request, children }: { request: Request; children: preact.ComponentChildren }) {
  return (
    <li class="card" data-change-id={request.changeId}>
      <h3>
        {request.command} on {target(request)} · {request.dimension}: <span class="change">{change(request)}</span>
      </h3>
      <p>
        proposed by <strong>{request.proposer}</strong> at <time dateTime={request.proposedAt}>{new Date(request.proposedAt).toLocaleString()}</time>
        {request.proposerReason ? ` · “${request.proposerReason}”` : ''}
        <br />
        takes effect <time dateTime={request.effectiveFrom}>{new Date(request.effectiveFrom).toLocaleString()}</time>
        {request.approvalExpiresAt ? (
          <>
            {' '}
            · expires unapproved <time dateTime={request.approvalExpiresAt}>{new Date(request.approvalExpiresAt).toLocaleString()}</time>
          </>
        ) : null}
      </p>
      {children}
    </li>
  );
}

type Action = [label: string, name: 'approveLimitChange' | 'rejectLimitChange' | 'withdrawLimitChange', enabled: boolean];

function Decision({ request, actions, note, onDecide }: { request: Request; actions: Action[]; note: string | null; onDecide(name: Action[1], changeId: string, reason: string): void }) {
  const [reason, setReason] = useState('');
  const id = `reason-${request.changeId}`;
  return (
    <div class="row">
      <label for={id}>Reason</label>
      <input id={id} value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      {actions.map(([label, name, enabled]) => (
        <button type="button" disabled={!enabled} title={enabled ? undefined : note ?? undefined} onClick={() => onDecide(name, request.changeId, reason)}>
          {label}
        </button>
      ))}
      {note && <span class="muted">{note}</span>}
    </div>
  );
}
