import { useState } from 'preact/hooks';
import { canEdit, describePayload, DIMENSIONS, formatLimit, gql, mutate, SOURCE_WORDS, type LimitValue, type Viewer } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { LimitPreview } from '../limitPreview.tsx';

interface CascadeDimension {
  dimension: string;
  winner: string;
  reason: string;
  value: LimitValue;
  levels: Array<{ source: string; value: LimitValue | null; unusable: boolean }>;
}

interface TenantData {
  tenant: {
    id: string;
    tier: { id: string; name: string } | null;
    overLimitPolicy: string;
    overrides: Array<{ dimension: string; expiresAt: string | null; value: LimitValue }>;
    cascade: CascadeDimension[];
    effectiveLimits: Array<{ dimension: string; shadow: { value: LimitValue; source: string } | null }>;
    commandBacklog: { undelivered: number; ceiling: number; source: string };
  } | null;
}

const VALUE = '{ ratePerSecond burst ceiling }';
const TENANT = `query ($id: ID!) {
  tenant(id: $id) {
    id tier { id name } overLimitPolicy
    overrides { dimension expiresAt value ${VALUE} }
    cascade { dimension winner reason value ${VALUE} levels { source unusable value ${VALUE} } }
    effectiveLimits { dimension shadow { source value ${VALUE} } }
    commandBacklog { undelivered ceiling source }
  }
}`;

const LEVELS = ['TENANT_OVERRIDE', 'TIER', 'PLATFORM_DEFAULT', 'SHIPPED_DEFAULT'];

export function TenantPage({ viewer, tenantId }: { viewer: Viewer; tenantId: string }) {
  const loaded = useLoad(() => gql<TenantData>(TENANT, { id: tenantId }), [tenantId]);
  const tenant = loaded.data?.tenant;
  if (loaded.error) return <p role="alert" class="error">{loaded.error}</p>;
  if (loaded.data && !tenant) return <p role="alert" class="error">No tenant {tenantId} is registered.</p>;
  if (!tenant) return <p class="loading">Loading…</p>;
  const overrideOf = (dimension: string) => tenant.overrides.find((each) => each.dimension === dimension);
  const shadowOf = (dimension: string) => tenant.effectiveLimits.find((each) => each.dimension === dimension)?.shadow ?? null;

  return (
    <section aria-labelledby="tenant-title">
      <h1 id="tenant-title">Tenant {tenant.id}</h1>
      <p>
        Tier: <strong>{tenant.tier ? `${tenant.tier.name} (${tenant.tier.id})` : 'none: platform defaults apply'}</strong> · API_REQUESTS over the limit:{' '}
        <strong>{tenant.overLimitPolicy}</strong> · <a href={`#/trends?tenant=${encodeURIComponent(tenant.id)}`}>Trends</a> ·{' '}
        <a href={`#/audit?tenant=${encodeURIComponent(tenant.id)}`}>Audit</a>
      </p>
      <h2>Limits: the cascade</h2>
      <div class="scroll" tabIndex={0}>
        <table class="cascade">
          <caption>Override → tier → platform default → shipped default: the first usable level wins</caption>
          <thead>
            <tr>
              <th scope="col">Dimension</th>
              {LEVELS.map((level) => (
                <th scope="col">{SOURCE_WORDS[level]}</th>
              ))}
              <th scope="col">In force</th>
              <th scope="col">Shadow (not enforced)</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {tenant.cascade.map((row) => (
              <tr data-dimension={row.dimension}>
                <th scope="row">{row.dimension}</th>
                {row.levels.map((level) => (
                  <td class={level.source === row.winner ? 'winner' : undefined} aria-label={level.source === row.winner ? `${formatLimit(level.value)} (wins)` : undefined}>
                    {level.unusable ? 'unusable value' : formatLimit(level.value)}
                    {level.source === 'TENANT_OVERRIDE' && overrideOf(row.dimension)?.expiresAt && (
                      <span class="badge override">until {new Date(overrideOf(row.dimension)!.expiresAt!).toLocaleString()}</span>
                    )}
                  </td>
                ))}
                <td>
                  <strong>{formatLimit(row.value)}</strong>
                </td>
                <td class="shadow">
                  {shadowOf(row.dimension) ? (
                    <>
                      {formatLimit(shadowOf(row.dimension)!.value)} <span class="badge">shadow, {SOURCE_WORDS[shadowOf(row.dimension)!.source]}</span>
                    </>
                  ) : (
                    '–'
                  )}
                </td>
                <td class="why">{row.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {tenant.effectiveLimits.some((each) => each.shadow) && (
        <p>
          A shadow limit is decided beside the one in force and refuses nothing: what it would have refused shows as shadow-limited in the{' '}
          <a href={`#/trends?tenant=${encodeURIComponent(tenant.id)}`}>trends</a>, until an operator promotes it.
        </p>
      )}
      {canEdit(viewer) && <OverrideForm tenantId={tenant.id} overrides={tenant.overrides} onSaved={loaded.reload} />}
      {canEdit(viewer) && <PolicyForm tenantId={tenant.id} policy={tenant.overLimitPolicy} onSaved={loaded.reload} />}
      <Quotas tenantId={tenant.id} />
      <h2>Command backlog</h2>
      <p>
        <span class="big" data-testid="undelivered">
          {tenant.commandBacklog.undelivered}
        </span>{' '}
        undelivered of a ceiling of {tenant.commandBacklog.ceiling} ({SOURCE_WORDS[tenant.commandBacklog.source]})
      </p>
      <meter min={0} max={tenant.commandBacklog.ceiling} value={tenant.commandBacklog.undelivered} aria-label="backlog against the ceiling" />
      <QueuedCommands tenantId={tenant.id} />
      <IngestKeys tenantId={tenant.id} manage={viewer.role === 'OPERATOR' || (viewer.role === 'TENANT_ADMIN' && viewer.tenantId === tenant.id)} />
    </section>
  );
}

function OverrideForm({ tenantId, overrides, onSaved }: { tenantId: string; overrides: Array<{ dimension: string }>; onSaved(): void }) {
  const [dimension, setDimension] = useState<string>('INGEST');
  const [value, setValue] = useState('');
  const [burst, setBurst] = useState('');
  const [reason, setReason] = useState('');
  const [expiresAt, setExpiresAt] = useState('');
  const [mode, setMode] = useState('ENFORCE');
  const [message, setMessage] = useState<string>();
  const isCeiling = dimension === 'UNDELIVERED_COMMANDS';
  const hasBurst = !isCeiling && dimension !== 'API_REQUESTS';
  const number = (text: string) => (text.trim() === '' ? null : Number(text));

  async function save(event: Event) {
    event.preventDefault();
    const input = {
      tenantId,
      dimension,
      reason,
      ...(isCeiling ? { ceiling: number(value) } : { ratePerSecond: number(value), ...(hasBurst && burst ? { burst: number(burst) } : {}) }),
      ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
      ...(hasBurst && mode === 'SHADOW' ? { mode } : {}),
    };
    const payload = await mutate('setTenantOverride', input, 'SetTenantOverrideInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }

  async function promote() {
    const payload = await mutate('promoteShadowLimit', { tenantId, dimension, reason: reason.trim() || 'shadow promoted' }, 'PromoteShadowLimitInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }

  async function clear() {
    if (!reason.trim()) {
      setMessage('A reason is required to clear an override.');
      return;
    }
    const payload = await mutate('clearTenantOverride', { tenantId, dimension, reason }, 'ClearTenantOverrideInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }

  return (
    <form class="card" onSubmit={save} aria-labelledby="override-title">
      <h2 id="override-title">Set or clear an override</h2>
      <label for="override-dimension">Dimension</label>
      <select id="override-dimension" value={dimension} onChange={(event) => setDimension(event.currentTarget.value)}>
        {DIMENSIONS.map((each) => (
          <option value={each}>
            {each}
            {overrides.some((override) => override.dimension === each) ? ' (override active)' : ''}
          </option>
        ))}
      </select>
      <label for="override-value">{isCeiling ? 'Ceiling (commands)' : 'Rate per second'}</label>
      <input id="override-value" inputMode="numeric" pattern="[0-9]*" value={value} onInput={(event) => setValue(event.currentTarget.value)} />
      {hasBurst && (
        <>
          <label for="override-burst">Burst (optional)</label>
          <input id="override-burst" inputMode="numeric" pattern="[0-9]*" value={burst} onInput={(event) => setBurst(event.currentTarget.value)} />
        </>
      )}
      {hasBurst && (
        <>
          <label for="override-mode">Mode</label>
          <select id="override-mode" value={mode} onChange={(event) => setMode(event.currentTarget.value)}>
            <option value="ENFORCE">Enforce: refuse over it</option>
            <option value="SHADOW">Shadow: count what it would refuse, refuse nothing</option>
          </select>
        </>
      )}
      <label for="override-reason">Reason (required)</label>
      <input id="override-reason" required value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      <label for="override-expires">Expires (optional, your local time)</label>
      <input id="override-expires" type="datetime-local" value={expiresAt} onInput={(event) => setExpiresAt(event.currentTarget.value)} />
      <div class="row">
        <button type="submit">Save override</button>
        <button type="button" onClick={clear}>
          Clear override
        </button>
        {hasBurst && (
          <button type="button" onClick={promote}>
            Enforce the shadow override
          </button>
        )}
      </div>
      {message && <p role="status">{message}</p>}
      {!isCeiling && (
        <LimitPreview
          id="override"
          change={() =>
            value.trim() === ''
              ? 'Type a rate per second to preview what it would refuse.'
              : { override: { tenantId, dimension, reason: reason.trim() || 'preview', ratePerSecond: number(value), ...(hasBurst && burst ? { burst: number(burst) } : {}) } }
          }
        />
      )}
    </form>
  );
}

function PolicyForm({ tenantId, policy, onSaved }: { tenantId: string; policy: string; onSaved(): void }) {
  const [chosen, setChosen] = useState(policy);
  const [reason, setReason] = useState('');
  const [message, setMessage] = useState<string>();
  async function save(event: Event) {
    event.preventDefault();
    const payload = await mutate('setTenantOverLimitPolicy', { tenantId, policy: chosen, ...(reason ? { reason } : {}) }, 'SetTenantOverLimitPolicyInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }
  return (
    <form class="card" onSubmit={save} aria-labelledby="policy-title">
      <h2 id="policy-title">API_REQUESTS over-limit policy</h2>
      <fieldset>
        <legend>Over the limit, API requests are</legend>
        <label>
          <input type="radio" name="policy" value="EXACT_REJECT" checked={chosen === 'EXACT_REJECT'} onChange={() => setChosen('EXACT_REJECT')} /> rejected exactly at the limit
        </label>
        <label>
          <input type="radio" name="policy" value="STABLE_DOWNSAMPLE" checked={chosen === 'STABLE_DOWNSAMPLE'} onChange={() => setChosen('STABLE_DOWNSAMPLE')} /> downsampled, keeping a stable set of callers
        </label>
      </fieldset>
      <label for="policy-reason">Reason</label>
      <input id="policy-reason" value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      <button type="submit">Save policy</button>
      {message && <p role="status">{message}</p>}
    </form>
  );
}

interface CommandsPage {
  commands: { edges: Array<{ node: { commandId: string; deviceId: string; status: string; enqueuedAt: string } }> };
}

interface QuotasData {
  quotas: Array<{ dimension: string; source: string; periodStart: string; periodEnd: string; used: number; quota: { period: string; limit: number; timeZone: string } }>;
  quotaNotices: Array<{ dimension: string; thresholdPercent: number; periodStart: string; used: number; limit: number }>;
}

const QUOTAS = `query ($tenantId: ID!) {
  quotas(tenantId: $tenantId) { dimension source periodStart periodEnd used quota { period limit timeZone } }
  quotaNotices(tenantId: $tenantId, first: 20) { dimension thresholdPercent periodStart used limit }
}`;

/** Each period quota as a bar of what is used against the period's limit, and the notices recorded. */
function Quotas({ tenantId }: { tenantId: string }) {
  const loaded = useLoad(() => gql<QuotasData>(QUOTAS, { tenantId }), [tenantId]);
  if (loaded.error) return <p class="muted">Quotas are not available: {loaded.error}</p>;
  if (!loaded.data) return null;
  const { quotas, quotaNotices } = loaded.data;
  return (
    <>
      <h2>Period quotas</h2>
      {quotas.length === 0 && <p>No quota: only the rates above apply.</p>}
      <ul class="plain">
        {quotas.map((each) => (
          <li data-quota={each.dimension}>
            <strong>{each.dimension}</strong>: {each.used.toLocaleString()} of {each.quota.limit.toLocaleString()} this {each.quota.period === 'DAY' ? 'day' : 'month'} (
            {new Date(each.periodStart).toLocaleString()} to {new Date(each.periodEnd).toLocaleString()}, {each.quota.timeZone}; {SOURCE_WORDS[each.source]})
            <br />
            <meter min={0} max={each.quota.limit} high={each.quota.limit * 0.8} value={Math.min(each.used, each.quota.limit)} aria-label={`${each.dimension} quota used this period`} />
          </li>
        ))}
      </ul>
      <h3>Notices sent</h3>
      <ul class="plain" data-testid="quota-notices">
        {quotaNotices.map((notice) => (
          <li>
            {notice.dimension} reached {notice.thresholdPercent} % ({notice.used.toLocaleString()} of {notice.limit.toLocaleString()}) in the period from{' '}
            {new Date(notice.periodStart).toLocaleString()}
          </li>
        ))}
        {quotaNotices.length === 0 && <li>None yet.</li>}
      </ul>
    </>
  );
}

function QueuedCommands({ tenantId }: { tenantId: string }) {
  const loaded = useLoad(
    () => gql<CommandsPage>('query ($tenantId: ID!) { commands(tenantId: $tenantId, status: QUEUED, first: 20) { edges { node { commandId deviceId status enqueuedAt } } } }', { tenantId }),
    [tenantId],
  );
  return (
    <>
      <h3>Queued commands (oldest first)</h3>
      {loaded.error ? (
        <p class="muted">Queued commands are not available: {loaded.error}</p>
      ) : (
        <ul class="plain">
          {loaded.data?.commands.edges.map(({ node }) => (
            <li>
              <code>{node.commandId}</code> for device <code>{node.deviceId}</code>, queued {new Date(node.enqueuedAt).toLocaleString()}
            </li>
          ))}
          {loaded.data?.commands.edges.length === 0 && <li>None queued.</li>}
        </ul>
      )}
    </>
  );
}

interface KeysData {
  ingestKeys: Array<{ keyId: string; kind: string; subject: string | null; createdAt: string; lastUsedAt: string | null; revokedAt: string | null }>;
}

type KeyAnswer = { __typename: string; key?: string; message?: string; field?: string | null; ingestKey?: { keyId: string } };

/** Ingest keys: the list, and (for an operator or the tenant's admin) issue and revoke, on the issueIngestKey and revokeIngestKey mutations. */
function IngestKeys({ tenantId, manage }: { tenantId: string; manage: boolean }) {
  const loaded = useLoad(() => gql<KeysData>('query ($tenantId: ID!) { ingestKeys(tenantId: $tenantId) { keyId kind subject createdAt lastUsedAt revokedAt } }', { tenantId }), [tenantId]);
  const [draft, setDraft] = useState({ deviceId: '', integration: '' });
  const [issued, setIssued] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const issue = async () => {
    setIssued(null);
    const input = { tenantId, ...(draft.deviceId ? { deviceId: draft.deviceId } : {}), ...(draft.integration ? { integration: draft.integration } : {}) };
    try {
      const data = await gql<{ issueIngestKey: KeyAnswer }>(
        'mutation ($input: IssueIngestKeyInput!) { issueIngestKey(input: $input) { __typename ... on IngestKeyIssued { key } ... on Error { message } ... on InputError { field } } }',
        { input },
      );
      const answer = data.issueIngestKey;
      if (answer.__typename === 'IngestKeyIssued') {
        setIssued(answer.key!);
        setStatus('Issued. Copy the key now: it is shown once, only its hash is kept.');
        loaded.reload();
      } else setStatus(`${answer.__typename}: ${answer.message ?? ''}${answer.field ? ` (${answer.field})` : ''}`);
    } catch (error) {
      setStatus(String((error as Error).message));
    }
  };
  const revoke = async (keyId: string) => {
    if (!window.confirm(`Revoke key ${keyId}? Devices using it are refused from then on.`)) return;
    try {
      const data = await gql<{ revokeIngestKey: KeyAnswer }>(
        'mutation ($input: RevokeIngestKeyInput!) { revokeIngestKey(input: $input) { __typename ... on Error { message } } }',
        { input: { tenantId, keyId } },
      );
      const answer = data.revokeIngestKey;
      setStatus(answer.__typename === 'IngestKeyRevoked' ? `Key ${keyId} revoked.` : `${answer.__typename}: ${answer.message ?? ''}`);
      loaded.reload();
    } catch (error) {
      setStatus(String((error as Error).message));
    }
  };
  return (
    <>
      <h2>Ingest keys</h2>
      {loaded.error ? (
        <p class="muted">Ingest keys are not available to this token: {loaded.error}</p>
      ) : (
        <div class="scroll" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Key id (hash prefix)</th>
                <th scope="col">Kind</th>
                <th scope="col">For</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Revoked</th>
                {manage && <th scope="col">Action</th>}
              </tr>
            </thead>
            <tbody>
              {loaded.data?.ingestKeys.map((key) => (
                <tr>
                  <td>
                    <code>{key.keyId}</code>
                  </td>
                  <td>{key.kind}</td>
                  <td>{key.subject ?? 'whole tenant'}</td>
                  <td>{new Date(key.createdAt).toLocaleString()}</td>
                  <td>{key.lastUsedAt ? new Date(key.lastUsedAt).toLocaleString() : 'never'}</td>
                  <td>{key.revokedAt ? new Date(key.revokedAt).toLocaleString() : '–'}</td>
                  {manage && (
                    <td>
                      {!key.revokedAt && (
                        <button type="button" onClick={() => void revoke(key.keyId)} aria-label={`Revoke key ${key.keyId}`}>
                          Revoke
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {loaded.data?.ingestKeys.length === 0 && <p class="muted">No ingest key yet.</p>}
        </div>
      )}
      {manage && (
        <form
          class="card"
          aria-labelledby="issue-key-title"
          onSubmit={(event) => {
            event.preventDefault();
            void issue();
          }}
        >
          <h3 id="issue-key-title">Issue an ingest key</h3>
          <label for="key-device">Device id (a key for this device only)</label>
          <input id="key-device" value={draft.deviceId} onInput={(event) => setDraft({ ...draft, deviceId: event.currentTarget.value })} />
          <label for="key-integration">Or an integration (a key for /v1/integrations)</label>
          <input id="key-integration" value={draft.integration} onInput={(event) => setDraft({ ...draft, integration: event.currentTarget.value })} />
          <p class="muted">Neither: a key for any device of the tenant.</p>
          <button type="submit">Issue key</button>
        </form>
      )}
      {issued && (
        <p>
          New key (shown once): <code data-testid="issued-key">{issued}</code>
        </p>
      )}
      {status && <p role="status">{status}</p>}
    </>
  );
}
