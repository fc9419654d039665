// The README's "First steps" by hand, replayed against the running service as written: every `gql '...'` line is
// sent to /graphql with an OPERATOR token and must be applied (or answer data), then the ingest `curl` is sent
// with the key issueIngestKey printed and must be accepted (202), and the admissions example is sent with a
// SERVICE token. An example that drifts from the API (a field renamed, a body the door refuses) fails here.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { curlBodies, multilineCurlBodies } from '../support/readmeExamples.ts';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
const firstSteps = readme.slice(readme.indexOf('### First steps'));

describe("the README's first steps, replayed", () => {
  let running: RunningService;
  let operator: string;
  let service: string;

  beforeAll(async () => {
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'readme', ttl: '1h' });
    service = await mintToken({ secret, role: 'SERVICE', sub: 'readme', ttl: '1h' });
  }, 240_000);
  afterAll(() => running?.stop());

  it('applies every gql step, then the ingest curl with the issued key is accepted', async () => {
    const steps = [...firstSteps.matchAll(/^gql '(.*)'$/gm)].map((match) => match[1]!);
    expect(steps.length).toBeGreaterThanOrEqual(6);
    let key: string | undefined;
    for (const step of steps) {
      const response = await fetch(`${running.baseUrl}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
        body: step,
      });
      const answer = (await response.json()) as { data?: Record<string, { __typename?: string; key?: string } | unknown[]>; errors?: unknown[] };
      expect(answer.errors, step).toBeUndefined();
      const [payload] = Object.values(answer.data ?? {});
      if (!Array.isArray(payload)) expect(['Applied', 'IngestKeyIssued'], step).toContain(payload?.__typename);
      if (!Array.isArray(payload) && payload?.key) key = payload.key;
    }
    expect(key).toBeDefined();

    const [body] = curlBodies(firstSteps, '/v1/ingest/');
    const ingest = await fetch(`${running.baseUrl}/v1/ingest/acme`, { method: 'POST', headers: { 'x-device-key': key!, 'content-type': 'application/json' }, body });
    expect(ingest.status, await ingest.clone().text()).toBe(202);
  }, 120_000);

  it('decides the admissions example for a SERVICE token', async () => {
    const [body] = multilineCurlBodies(readme, '/v1/admissions');
    const response = await fetch(`${running.baseUrl}/v1/admissions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${service}`, 'content-type': 'application/json' },
      // The example's instant is fixed; the service meters it only within a week of now, so it is sent as now.
      body: body!.replace(/"at": "[^"]*"/g, `"at": "${new Date().toISOString()}"`),
    });
    expect(response.status).toBe(200);
    const { decisions } = (await response.json()) as { decisions: Array<{ admitted: boolean }> };
    expect(decisions).toHaveLength(2);
  }, 60_000);
});
