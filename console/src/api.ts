// The console's only way to the service: the public GraphQL API at /graphql with the signed-in bearer token.
// Queries and mutations are POSTs; subscriptions use graphql-yoga's server-sent events over a streamed POST
// (EventSource cannot send an Authorization header).

// The same key src/console/graphiqlWithConsoleToken.ts reads, so GraphiQL opens with this token.
const TOKEN_KEY = 'governance-console.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** The service refused the token (HTTP 401): the console shows the sign-in again. */
export class Unauthorized extends Error {}

/** A GraphQL error (FORBIDDEN, BAD_USER_INPUT, ...), with its code. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Called whenever a request answers 401. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function refused(): never {
  forgetToken();
  for (const listener of unauthorizedListeners) listener();
  throw new Unauthorized('the token was refused');
}

function headers(token: string | null, accept: string): Record<string, string> {
  return { 'content-type': 'application/json', accept, ...(token ? { authorization: `Bearer ${token}` } : {}) };
}

export async function gql<Data>(query: string, variables: Record<string, unknown> = {}, token = storedToken()): Promise<Data> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: headers(token, 'application/graphql-response+json, application/json'),
    body: JSON.stringify({ query, variables }),
  });
  if (response.status === 401) refused();
  const body = (await response.json()) as { data?: Data; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  const error = body.errors?.[0];
  if (error) throw new ApiError(error.message, error.extensions?.code);
  return body.data as Data;
}

/** Opens a subscription; each `next` payload's data goes to `onData`. Returns a function that closes it. */
export function subscribe<Data>(query: string, variables: Record<string, unknown>, onData: (data: Data) => void): () => void {
  const abort = new AbortController();
  void (async () => {
    const response = await fetch('/graphql', {
      method: 'POST',
      headers: headers(storedToken(), 'text/event-stream'),
      body: JSON.stringify({ query, variables }),
      signal: abort.signal,
    });
    if (response.status === 401) refused();
    if (!response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = message
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trim())
          .join('\n');
        if (data) {
          const payload = JSON.parse(data) as { data?: Data };
          if (payload.data) onData(payload.data);
        }
      }
    }
  })().catch(() => {
    // Closed by the page or by the server; the chart keeps what it has and the next navigation reopens it.
  });
  return () => abort.abort();
}

export interface Viewer {
  id: string;
  role: 'OPERATOR' | 'AUDITOR' | 'SERVICE' | 'TENANT_ADMIN' | 'TENANT_VIEWER';
  tenantId: string | null;
}

export const canEdit = (viewer: Viewer): boolean => viewer.role === 'OPERATOR';
export const seesEveryTenant = (viewer: Viewer): boolean => viewer.role === 'OPERATOR' || viewer.role === 'AUDITOR';

export const DIMENSIONS = ['INGEST', 'EGRESS', 'AI_INFERENCE', 'PROVISIONING', 'UNDELIVERED_COMMANDS', 'API_REQUESTS'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

export interface LimitValue {
  ratePerSecond: number | null;
  burst: number | null;
  ceiling: number | null;
}

export const LIMIT_VALUE = 'ratePerSecond burst ceiling';

export function formatLimit(value: LimitValue | null | undefined): string {
  if (!value) return '–';
  if (value.ceiling !== null) return `${value.ceiling.toLocaleString('en')} queued`;
  if (value.ratePerSecond === null) return '–';
  const rate = `${value.ratePerSecond.toLocaleString('en')}/s`;
  return value.burst !== null ? `${rate}, burst ${value.burst.toLocaleString('en')}` : rate;
}

export const SOURCE_WORDS: Record<string, string> = {
  TENANT_OVERRIDE: 'override',
  TIER: 'tier',
  PLATFORM_DEFAULT: 'platform',
  SHIPPED_DEFAULT: 'shipped',
};

/** The typed payload of a mutation: Applied, or an error type with its message. */
export interface MutationPayload {
  __typename: string;
  message?: string;
  field?: string | null;
}

export const PAYLOAD = '{ __typename ... on Error { message } ... on InputError { field } }';

export async function mutate(name: string, input: Record<string, unknown>, inputType: string): Promise<MutationPayload> {
  const data = await gql<Record<string, MutationPayload>>(`mutation ($input: ${inputType}!) { ${name}(input: $input) ${PAYLOAD} }`, { input });
  return data[name]!;
}

/** "Applied", or the refusal in words (with the field it names). */
export function describePayload(payload: MutationPayload): string {
  if (payload.__typename === 'Applied') return 'Saved.';
  if (payload.__typename === 'PendingApproval') return 'Recorded: it waits for a second operator (Changes).';
  if (payload.__typename === 'ScheduledLimitChange') return 'Scheduled: it takes effect at its instant (Changes).';
  return `${payload.__typename}: ${payload.message ?? ''}${payload.field ? ` (${payload.field})` : ''}`;
}
