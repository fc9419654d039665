import { useState } from 'preact/hooks';
import { DIMENSIONS, formatLimit, gql, SOURCE_WORDS, seesEveryTenant, type LimitValue, type Viewer } from '../api.ts';
import { go, useLoad } from '../hooks.ts';
import { approvalLine, beforeAfter, level, type Change } from '../auditLine.ts';

const VALUE = '{ ratePerSecond burst ceiling }';
const HISTORY = `query ($tenantId: ID, $tierId: ID, $dimension: Dimension, $after: String) {
  limitHistory(tenantId: $tenantId, tierId: $tierId, dimension: $dimension, first: 50, after: $after) {
    edges { node { at actor reason kind mode dimension tenantId tierId previousTierId previous ${VALUE} value ${VALUE} policy previousPolicy expiresAt approval { proposedBy proposedAt proposerReason effectiveFrom approvedBy approvedAt approverReason } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export function Audit({ viewer, params }: { viewer: Viewer; params: URLSearchParams }) {
  const tenantId = params.get('tenant') ?? (seesEveryTenant(viewer) ? '' : viewer.tenantId ?? '');
  const tierId = params.get('tier') ?? '';
  const dimension = params.get('dimension') ?? '';
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const after = cursors.at(-1) ?? null;
  const history = useLoad(
    () => gql<{ limitHistory: { edges: Array<{ node: Change }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>(HISTORY, {
      tenantId: tenantId || null,
      tierId: tierId || null,
      dimension: dimension || null,
      after,
    }),
    [tenantId, tierId, dimension, after],
  );
  const [draft, setDraft] = useState({ tenant: tenantId, tier: tierId, dimension });

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <form
        class="row"
        onSubmit={(event) => {
          event.preventDefault();
          setCursors([null]);
          go(`/audit?${new URLSearchParams(Object.entries(draft).filter(([, value]) => value))}`);
        }}
      >
        <label for="audit-tenant">Tenant</label>
        <input id="audit-tenant" value={draft.tenant} disabled={!seesEveryTenant(viewer)} onInput={(event) => setDraft({ ...draft, tenant: event.currentTarget.value })} />
        <label for="audit-tier">Tier</label>
        <input id="audit-tier" value={draft.tier} onInput={(event) => setDraft({ ...draft, tier: event.currentTarget.value })} />
        <label for="audit-dimension">Dimension</label>
        <select id="audit-dimension" value={draft.dimension} onChange={(event) => setDraft({ ...draft, dimension: event.currentTarget.value })}>
          <option value="">any</option>
          {DIMENSIONS.map((each) => (
            <option value={each}>{each}</option>
          ))}
        </select>
        <button type="submit">Filter</button>
      </form>
      {history.error && <p role="alert" class="error">{history.error}</p>}
      <ol class="timeline" aria-label="Limit changes, newest first">
        {history.data?.limitHistory.edges.map(({ node }) => (
          <li>
            <time dateTime={node.at}>{new Date(node.at).toLocaleString()}</time>
            <div>
              <strong>{node.kind}</strong>
              {node.mode === 'SHADOW' && <span class="badge">shadow: refuses nothing</span>} on {level(node)}
              {node.dimension ? ` · ${node.dimension}` : ''}: <span class="change">{beforeAfter(node)}</span>
              {node.expiresAt ? ` (until ${new Date(node.expiresAt).toLocaleString()})` : ''}
              <br />
              by <strong>{node.actor}</strong>
              {node.reason ? ` · “${node.reason}”` : ''}
              {node.approval && (
                <>
                  <br />
                  <span class="approval">{approvalLine(node)}</span>
                </>
              )}
            </div>
          </li>
        ))}
      </ol>
      {history.data?.limitHistory.edges.length === 0 && <p>No change matches.</p>}
      <div class="row">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!history.data?.limitHistory.pageInfo.hasNextPage} onClick={() => setCursors([...cursors, history.data!.limitHistory.pageInfo.endCursor])}>
          Older
        </button>
      </div>
      <TimeTravel viewer={viewer} initialTenant={tenantId} />
    </section>
  );
}

/** Now, in the local time a datetime-local input shows, rounded up to the next second so that what was just
 * changed is included. */
function localNow(): string {
  const now = new Date(Math.ceil(Date.now() / 1000) * 1000);
  return new Date(now.getTime() - now.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
}

function TimeTravel({ viewer, initialTenant }: { viewer: Viewer; initialTenant: string }) {
  const [tenantId, setTenantId] = useState(initialTenant);
  const [at, setAt] = useState(localNow);
  const [asked, setAsked] = useState<{ tenantId: string; at: string } | null>(null);
  const limits = useLoad(
    async () =>
      asked
        ? gql<{ effectiveLimitsAt: Array<{ dimension: string; source: string; value: LimitValue }> }>(
            'query ($tenantId: ID!, $at: DateTime!) { effectiveLimitsAt(tenantId: $tenantId, at: $at) { dimension source value { ratePerSecond burst ceiling } } }',
            { tenantId: asked.tenantId, at: new Date(asked.at).toISOString() },
          )
        : undefined,
    [asked],
  );
  return (
    <form
      class="card"
      aria-labelledby="travel-title"
      onSubmit={(event) => {
        event.preventDefault();
        setAsked({ tenantId, at });
      }}
    >
      <h2 id="travel-title">What was in force at an instant</h2>
      <label for="travel-tenant">Tenant</label>
      <input id="travel-tenant" required value={tenantId} disabled={!seesEveryTenant(viewer)} onInput={(event) => setTenantId(event.currentTarget.value)} />
      <label for="travel-at">Instant (your local time)</label>
      <input id="travel-at" type="datetime-local" step={1} required value={at} onInput={(event) => setAt(event.currentTarget.value)} />
      <button type="submit">Show</button>
      {limits.error && <p role="alert" class="error">{limits.error}</p>}
      {limits.data && (
        <table data-testid="time-travel">
          <thead>
            <tr>
              <th scope="col">Dimension</th>
              <th scope="col">In force</th>
              <th scope="col">From</th>
            </tr>
          </thead>
          <tbody>
            {limits.data.effectiveLimitsAt.map((limit) => (
              <tr>
                <th scope="row">{limit.dimension}</th>
                <td>{formatLimit(limit.value)}</td>
                <td>{SOURCE_WORDS[limit.source]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </form>
  );
}
