import { useState } from 'preact/hooks';
import { canEdit, describePayload, DIMENSIONS, formatLimit, gql, mutate, SOURCE_WORDS, type LimitValue, type Viewer } from '../api.ts';
import { go, useLoad } from '../hooks.ts';

interface TenantRow {
  id: string;
  tier: { id: string; name: string } | null;
  effectiveLimits: Array<{ dimension: string; source: string; value: LimitValue }>;
  overrides: Array<{ dimension: string; expiresAt: string | null }>;
}

interface Page {
  tenants: { edges: Array<{ node: TenantRow }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

const PAGE_SIZE = 20;
const TENANTS = `query ($first: Int, $after: String, $search: String) {
  tenants(first: $first, after: $after, search: $search) {
    edges { node { id tier { id name } effectiveLimits { dimension source value { ratePerSecond burst ceiling } } overrides { dimension expiresAt } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export function Tenants({ viewer, params }: { viewer: Viewer; params: URLSearchParams }) {
  const search = params.get('search') ?? '';
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const after = cursors.at(-1) ?? null;
  const page = useLoad(() => gql<Page>(TENANTS, { first: PAGE_SIZE, after, search: search || null }), [search, after]);
  const [draft, setDraft] = useState(search);

  return (
    <section aria-labelledby="tenants-title">
      <h1 id="tenants-title">Tenants</h1>
      <form
        role="search"
        class="row"
        onSubmit={(event) => {
          event.preventDefault();
          setCursors([null]);
          go(`/tenants?search=${encodeURIComponent(draft)}`);
        }}
      >
        <label for="tenant-search">Search tenants</label>
        <input id="tenant-search" type="search" value={draft} onInput={(event) => setDraft(event.currentTarget.value)} placeholder="part of a tenant id" />
        <button type="submit">Search</button>
      </form>
      {page.error && <p role="alert" class="error">{page.error}</p>}
      <div class="scroll" tabIndex={0}>
        {/* class stack: on a phone each tenant is a block of labelled lines instead of a row cut off at the edge. */}
        <table class="stack">
          <caption>Effective limit per dimension, and the level of the cascade it comes from</caption>
          <thead>
            <tr>
              <th scope="col">Tenant</th>
              <th scope="col">Tier</th>
              {DIMENSIONS.map((dimension) => (
                <th scope="col">{dimension}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {page.data?.tenants.edges.map(({ node }) => (
              <tr>
                <th scope="row">
                  <a href={`#/tenant/${encodeURIComponent(node.id)}`}>{node.id}</a>
                </th>
                <td data-label="Tier">{node.tier ? node.tier.name : '–'}</td>
                {DIMENSIONS.map((dimension) => {
                  const limit = node.effectiveLimits.find((each) => each.dimension === dimension);
                  const override = node.overrides.find((each) => each.dimension === dimension);
                  return (
                    <td data-label={dimension}>
                      {formatLimit(limit?.value)} <span class={`badge ${limit?.source ?? ''}`}>{SOURCE_WORDS[limit?.source ?? ''] ?? ''}</span>
                      {override && (
                        <span class="badge override" title="an override is active">
                          override{override.expiresAt ? ` until ${new Date(override.expiresAt).toLocaleString()}` : ''}
                        </span>
                      )}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.data && page.data.tenants.edges.length === 0 && <p>No tenant matches.</p>}
      <div class="row">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button
          type="button"
          disabled={!page.data?.tenants.pageInfo.hasNextPage}
          onClick={() => setCursors([...cursors, page.data!.tenants.pageInfo.endCursor])}
        >
          Next page
        </button>
      </div>
      {canEdit(viewer) && <RegisterTenant onRegistered={page.reload} />}
    </section>
  );
}

function RegisterTenant({ onRegistered }: { onRegistered(): void }) {
  const [tenantId, setTenantId] = useState('');
  const [tierId, setTierId] = useState('');
  const [message, setMessage] = useState<string>();
  const tiers = useLoad(() => gql<{ tiers: Array<{ id: string; name: string }> }>('{ tiers { id name } }'), []);

  async function submit(event: Event) {
    event.preventDefault();
    const payload = await mutate('registerTenant', { tenantId, tierId: tierId || null }, 'RegisterTenantInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') {
      setTenantId('');
      onRegistered();
    }
  }

  return (
    <form class="card" onSubmit={submit} aria-labelledby="register-title">
      <h2 id="register-title">Register a tenant</h2>
      <label for="register-id">Tenant id</label>
      <input id="register-id" required value={tenantId} onInput={(event) => setTenantId(event.currentTarget.value)} />
      <label for="register-tier">Tier</label>
      <select id="register-tier" value={tierId} onChange={(event) => setTierId(event.currentTarget.value)}>
        <option value="">no tier (platform defaults)</option>
        {tiers.data?.tiers.map((tier) => (
          <option value={tier.id}>{tier.name}</option>
        ))}
      </select>
      <button type="submit">Register</button>
      {message && <p role="status">{message}</p>}
    </form>
  );
}
