import { useState } from 'preact/hooks';
import { gql, storeToken, Unauthorized, type Viewer } from '../api.ts';

export function SignIn({ onSignedIn }: { onSignedIn(viewer: Viewer): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { viewer } = await gql<{ viewer: Viewer }>('{ viewer { id role tenantId } }', {}, token.trim());
      storeToken(token.trim());
      onSignedIn(viewer);
    } catch (caught) {
      setError(caught instanceof Unauthorized ? 'That token was refused: it is malformed, expired or signed with another secret.' : String((caught as Error).message));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" class="signin">
      <h1>Sign in to the governance console</h1>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <textarea id="token" name="token" rows={5} required value={token} onInput={(event) => setToken(event.currentTarget.value)} autoComplete="off" spellcheck={false} />
        <button type="submit" disabled={busy || !token.trim()}>
          Sign in
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
      <p>
        Mint a token on the machine that runs the service, for example <code>npx governance token --role OPERATOR</code>, or{' '}
        <code>npx governance token --role TENANT_VIEWER --tenant acme</code> for one tenant's read-only view. The token is kept only in
        this tab (sessionStorage) and is sent as a bearer token to the GraphQL API.
      </p>
    </main>
  );
}
