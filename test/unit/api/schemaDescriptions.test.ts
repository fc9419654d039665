// What the schema tells a client who reads it (GraphiQL, schema/schema.graphql): where the changes that moved a
// tenant's limits are listed, and what leaving out `burst` gives (twice the rate on INGEST, which surprised users).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { acceptLimit } from '../../../src/governance/index.ts';

const schema = readFileSync(path.resolve(import.meta.dirname, '../../../schema/schema.graphql'), 'utf8');

it("says on limitHistory's tenantId where tier and platform changes are", () => {
  const field = /"""\s*Limit changes, newest first[\s\S]*?limitHistory\(([\s\S]*?)\): LimitChangeConnection!/.exec(schema);
  expect(field?.[0]).toMatch(/Only this tenant's own changes\. The tier and platform changes that moved its limits are not listed here: effectiveLimitTimeline\(tenantId, dimension\)/);
});

it('says on every burst input what leaving it out gives, and the cascade gives that', () => {
  for (const input of ['SetPlatformDefaultInput', 'SetTierLimitInput', 'SetTenantOverrideInput']) {
    const block = new RegExp(`input ${input} \\{([\\s\\S]*?)\\n\\}`).exec(schema)?.[1] ?? '';
    expect(block, input).toMatch(/Left out, it is ratePerSecond times the dimension's shipped burst\/rate ratio \(INGEST 2 x, EGRESS 2 x, AI_INFERENCE 2 x, PROVISIONING 25 x the rate/);
  }
  expect(acceptLimit('INGEST', { ratePerSecond: 500 })).toEqual({ ratePerSecond: 500, burst: 1000 });
  expect(acceptLimit('PROVISIONING', { ratePerSecond: 5 })).toEqual({ ratePerSecond: 5, burst: 125 });
});
