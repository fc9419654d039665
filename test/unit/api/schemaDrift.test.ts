import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { printedSchema, SCHEMA_FILE } from '../../../src/api/printSchema.ts';

describe('schema/schema.graphql', () => {
  it('is the schema the code builds (regenerate with `npm run schema:print`)', async () => {
    const checkedIn = await readFile(SCHEMA_FILE, 'utf8');
    const built = printedSchema();
    if (checkedIn !== built) {
      expect.fail('schema/schema.graphql differs from the schema the code builds: run `npm run schema:print` and commit the result');
    }
  });

  it('keeps every query and mutation name of the API contract (docs/governance-model.md)', () => {
    const schema = printedSchema();
    const queries = ['effectiveLimits', 'effectiveLimitsAt', 'tenant', 'tenants', 'tiers', 'limitHistory', 'shedTrend', 'topShedders', 'commandBacklog', 'unresolvedAdmissions'];
    const mutations = ['setPlatformDefault', 'defineTier', 'setTierLimit', 'clearTierLimit', 'registerTenant', 'assignTenantTier', 'setTenantOverride', 'clearTenantOverride', 'enqueueCommand', 'markCommandDelivered'];
    for (const name of [...queries, ...mutations]) expect(schema).toMatch(new RegExp(`^  ${name}\\(|^  ${name}: `, 'm'));
    for (const type of ['enum Dimension', 'enum Allowance', 'enum LimitSource', 'enum TrendBucket', 'type LimitValue', 'type EffectiveLimit', 'type LimitChange', 'type TrendPoint', 'type CommandBacklog']) {
      expect(schema).toContain(type);
    }
    // The contract's two outcomes of an enqueue; later members (conflicts, typed errors) sort between and after them.
    expect(schema).toMatch(/^union EnqueueCommandResult = CommandAccepted \|.* CommandRejected\b/m);
  });
});
