// Operator calls on a service running as a process of its own, as an operator's client makes them: a GraphQL
// mutation with an OPERATOR token, which must answer Applied. For the suites that kill and restart the service
// (chaos, MQTT redelivery) and the benches that drive the compiled build (scale-out, envoy-rls).
import { mintToken } from '../../src/auth/token.ts';

export type Mutate = (field: string, input: Record<string, unknown>) => Promise<void>;

/** Mutations on the service at `baseUrl`, with an OPERATOR token signed by `jwtSecret` (its GOVERNANCE_JWT_SECRET). */
export async function operatorMutations(baseUrl: string, jwtSecret: string, subject: string): Promise<Mutate> {
  const token = await mintToken({ secret: jwtSecret, role: 'OPERATOR', sub: subject, ttl: '1h' });
  return async (field, input) => {
    const type = `${field[0]!.toUpperCase()}${field.slice(1)}Input`;
    const response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: `mutation ($input: ${type}!) { ${field}(input: $input) { __typename } }`, variables: { input } }),
    });
    const answer = (await response.json()) as { data?: Record<string, { __typename: string }> };
    if (answer.data?.[field]?.__typename !== 'Applied') throw new Error(`${field}: ${JSON.stringify(answer)}`);
  };
}
