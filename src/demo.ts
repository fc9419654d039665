// `governance demo`: a first run that works on a fresh install. Against a running service (embedded or
// PostgreSQL) it defines a tier, registers two tenants, issues a device key, drives traffic of which part is
// over acme's limit (answered 429), and prints the queries that show the result. Everything goes through the
// public API (GraphQL and the ingest front door), so it also shows how a client talks to the service.
// Running it twice is fine: what exists already is left as it is.

export interface DemoOptions {
  /** http://host:port of the running service. */
  url: string;
  /** An OPERATOR token. */
  token: string;
  seconds: number;
  log: (line: string) => void;
}

export interface DemoResult {
  accepted: Record<string, number>;
  refused: Record<string, number>;
}

const TIER = 'demo';
/** acme sends three times its limit; globex stays under it. */
const TRAFFIC = { acme: 30, globex: 5 } as const;

function noServiceAnswers(url: string, error: unknown): Error {
  return new Error(`no service answers at ${url} (${(error as Error).message}): start it with npm start, or pass --url`);
}

/** Whether the service at `url` takes this bearer token (anything but 401); no answer at all is an error. */
export async function serviceAccepts(url: string, token: string): Promise<boolean> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: '{ __typename }' }),
  }).catch((error: unknown) => {
    throw noServiceAnswers(url, error);
  });
  await response.arrayBuffer();
  return response.status !== 401;
}

export async function runDemo({ url, token, seconds, log }: DemoOptions): Promise<DemoResult> {
  const graphql = async (query: string, variables?: Record<string, unknown>) => {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    }).catch((error: unknown) => {
      throw noServiceAnswers(url, error);
    });
    const body = (await response.json().catch(() => ({}))) as { data?: Record<string, { __typename?: string; message?: string; key?: string }>; errors?: Array<{ message: string }> };
    if (response.status !== 200 || body.errors?.length || !body.data) {
      throw new Error(`${url}/graphql answered ${response.status}: ${body.errors?.map((error) => error.message).join('; ') ?? 'no data'}`);
    }
    return Object.values(body.data)[0]!;
  };
  const mutate = async (mutation: string, tolerated: string[] = []) => {
    const payload = await graphql(`mutation { ${mutation} { __typename ... on Error { message } } }`);
    if (payload.__typename !== 'Applied' && !tolerated.includes(payload.__typename!)) throw new Error(`${mutation.split('(')[0]}: ${payload.message ?? payload.__typename}`);
    log(`  ${mutation.split('(')[0]}: ${payload.__typename === 'Applied' ? 'done' : `already so (${payload.__typename})`}`);
  };

  log('setting up a tier, two tenants and a device key');
  await mutate(`defineTier(input: { tierId: "${TIER}", name: "Demo" })`, ['TierAlreadyDefined']);
  await mutate(`setTierLimit(input: { tierId: "${TIER}", dimension: INGEST, ratePerSecond: 10, burst: 10, reason: "demo" })`);
  await mutate(`registerTenant(input: { tenantId: "acme", tierId: "${TIER}" })`, ['TenantAlreadyRegistered']);
  await mutate(`registerTenant(input: { tenantId: "globex", tierId: "${TIER}" })`, ['TenantAlreadyRegistered']);
  const keys: Record<string, string> = {};
  for (const tenant of Object.keys(TRAFFIC)) {
    const issued = await graphql(`mutation { issueIngestKey(input: { tenantId: "${tenant}", deviceId: "pump-1" }) { __typename ... on IngestKeyIssued { key } ... on Error { message } } }`);
    if (issued.__typename !== 'IngestKeyIssued') throw new Error(`issueIngestKey: ${issued.message ?? issued.__typename}`);
    keys[tenant] = issued.key!;
  }
  log('  issueIngestKey: a key for device pump-1 of each tenant');

  log(`sending readings for ${seconds} s: acme ${TRAFFIC.acme}/s and globex ${TRAFFIC.globex}/s against a limit of 10/s`);
  const accepted: Record<string, number> = { acme: 0, globex: 0 };
  const refused: Record<string, number> = { acme: 0, globex: 0 };
  const startedAt = Date.now();
  for (let second = 0; second < seconds; second++) {
    await Promise.all(
      Object.entries(TRAFFIC).map(async ([tenant, perSecond]) => {
        for (let i = 0; i < perSecond; i++) {
          const response = await fetch(`${url}/v1/ingest/${tenant}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-device-key': keys[tenant]! },
            body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { pressure: 1 + Math.random() } }] }),
          });
          await response.arrayBuffer();
          if (response.status === 202) accepted[tenant]! += 1;
          else if (response.status === 429) refused[tenant]! += 1;
          else throw new Error(`POST /v1/ingest/${tenant} answered ${response.status}`);
        }
      }),
    );
    const wait = startedAt + (second + 1) * 1000 - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  for (const tenant of Object.keys(TRAFFIC)) log(`  ${tenant}: ${accepted[tenant]} accepted (202), ${refused[tenant]} refused (429)`);

  const from = new Date(startedAt - 60_000).toISOString();
  const query = (text: string) => JSON.stringify({ query: text }).replaceAll("'", "'\\''");
  log('');
  log('look at the result (the ledger is folded into trends within a few seconds):');
  log(`  TOKEN=$(npx governance token --role OPERATOR)`);
  for (const text of [
    `{ effectiveLimits(tenantId: "acme") { dimension source value { ratePerSecond burst ceiling } } }`,
    `{ shedTrend(tenantId: "acme", dimension: INGEST, from: "${from}", to: "${new Date(Date.now() + 60_000).toISOString()}", bucket: MINUTE, fill: true) { start admitted limited limitedUnits } }`,
    `{ topShedders(from: "${from}", to: "${new Date(Date.now() + 60_000).toISOString()}") { tenantId limited limitedUnits } }`,
    `{ limitHistory(tenantId: "acme", first: 10) { edges { node { at kind actor reason } } } }`,
    `{ ingestKeys(tenantId: "acme") { keyId kind subject createdAt lastUsedAt } }`,
  ]) {
    log(`  curl -s ${url}/graphql -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '${query(text)}'`);
  }
  log(`  curl -s ${url}/metrics | grep governance_refused_messages_total`);
  return { accepted, refused };
}
