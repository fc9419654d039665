// The console: sign in with a token, then tenants, one tenant's cascade and backlog, trends, the audit
// timeline and the platform settings, all read and changed through the public GraphQL API. The role in the
// token decides what is shown and what can be edited; the API enforces the same rules on its own.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { forgetToken, gql, onUnauthorized, seesEveryTenant, storedToken, type Viewer } from './api.ts';
import { go, useRoute } from './hooks.ts';
import { SignIn } from './pages/SignIn.tsx';
import { Tenants } from './pages/Tenants.tsx';
import { TenantPage } from './pages/Tenant.tsx';
import { Trends } from './pages/Trends.tsx';
import { Audit } from './pages/Audit.tsx';
import { Platform } from './pages/Platform.tsx';
import { Changes } from './pages/Changes.tsx';
import './style.css';

const VIEWER = '{ viewer { id role tenantId } }';

function App() {
  const route = useRoute();
  const [viewer, setViewer] = useState<Viewer | null | undefined>(storedToken() ? undefined : null);

  useEffect(() => onUnauthorized(() => setViewer(null)), []);
  useEffect(() => {
    if (viewer !== undefined) return;
    gql<{ viewer: Viewer }>(VIEWER).then(
      (data) => setViewer(data.viewer),
      () => setViewer(null),
    );
  }, [viewer]);

  if (viewer === undefined) return <p class="loading">Loading…</p>;
  if (viewer === null) return <SignIn onSignedIn={(signedIn) => setViewer(signedIn)} />;

  const home = seesEveryTenant(viewer) ? 'tenants' : `tenant/${encodeURIComponent(viewer.tenantId ?? '')}`;
  const [page = home.split('/')[0], ...rest] = route.path;
  const links: Array<[string, string]> = [
    ...(seesEveryTenant(viewer) ? [['tenants', 'Tenants'] as [string, string]] : [[home, 'My tenant'] as [string, string]]),
    ['trends', 'Trends'],
    ['audit', 'Audit'],
    ...(seesEveryTenant(viewer) ? [['platform', 'Platform'] as [string, string]] : []),
    ...(seesEveryTenant(viewer) ? [['changes', 'Changes'] as [string, string]] : []),
  ];

  let content;
  switch (page) {
    case 'tenant':
      content = <TenantPage viewer={viewer} tenantId={rest[0] ?? viewer.tenantId ?? ''} />;
      break;
    case 'trends':
      content = <Trends viewer={viewer} params={route.params} />;
      break;
    case 'audit':
      content = <Audit viewer={viewer} params={route.params} />;
      break;
    case 'platform':
      content = <Platform viewer={viewer} />;
      break;
    case 'changes':
      content = <Changes viewer={viewer} />;
      break;
    default:
      content = seesEveryTenant(viewer) ? <Tenants viewer={viewer} params={route.params} /> : <TenantPage viewer={viewer} tenantId={viewer.tenantId ?? ''} />;
  }

  return (
    <>
      <a class="skip" href="#main" onClick={(event) => { event.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header>
        <span class="brand">governance-ledger</span>
        <nav aria-label="Console">
          {links.map(([target, label]) => (
            <a href={`#/${target}`} aria-current={page === target.split('/')[0] ? 'page' : undefined}>
              {label}
            </a>
          ))}
          <a href="/graphql">
            GraphiQL
          </a>
        </nav>
        <span class="who">
          {viewer.id} · {viewer.role}
          {viewer.tenantId ? ` · ${viewer.tenantId}` : ''}
          <button
            type="button"
            class="link"
            onClick={() => {
              forgetToken();
              setViewer(null);
              go('/');
            }}
          >
            Sign out
          </button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        {content}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
