// limitChangePreview through GraphQL on PostgreSQL: who may ask, the answer's shape, typed refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresOnly } from '../../support/databases.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

const QUERY = `query ($from: DateTime, $to: DateTime) {
  limitChangePreview(tierLimit: { tierId: "gold", dimension: INGEST, ratePerSecond: 5, burst: 10 }, from: $from, to: $to) {
    dimension tenantsAffected
    total { demandUnits refusedUnits refusedMessages limitedSeconds currentRefusedUnits recordedRefusedUnits worstMinute { start refusedUnits } }
    tenants { tenantId currentSource proposedLimit { ratePerSecond burst } currentLimit { ratePerSecond burst } refusedUnits currentRefusedUnits limitedSeconds }
  }
}`;

describe.skipIf(!postgresOnly)('limitChangePreview on PostgreSQL (DATABASE_URL)', () => {
  let api: ApiHarness;
  let operator: string;
  const fromSecond = Math.floor(Date.now() / 1000) - 120;
  const variables = { from: new Date(fromSecond * 1000).toISOString(), to: new Date((fromSecond + 10) * 1000).toISOString() };

  beforeAll(async () => {
    api = await openApiHarness(postgresOnly!);
    operator = await api.token('OPERATOR');
    for (const [name, input] of [
      ['defineTier', 'tierId: "gold", name: "Gold"'],
      ['setTierLimit', 'tierId: "gold", dimension: INGEST, ratePerSecond: 100'],
      ['registerTenant', 'tenantId: "acme", tierId: "gold"'],
    ] as const) {
      const response = await api.gql<Record<string, { __typename: string }>>(operator, `mutation { ${name}(input: { ${input} }) { __typename } }`);
      expect(response.data?.[name]?.__typename).toBe('Applied');
    }
    await api.projections.waitForCaughtUp();
    // 50 readings in one message each second for 10 s: at 5/s (burst 10) 10 + 5 x 10 = 60 fit, 440 do not.
    const summaries = Array.from({ length: 10 }, (_, i) =>
      admissionSummary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE', fromSecond: fromSecond + i, seconds: 1, admittedUnits: 50, admittedMessages: 50 }),
    );
    await createLedgerRecorder(api.store).record(summaries, []);
  }, 180_000);
  afterAll(() => api?.dispose());

  it('answers operators and auditors with the totals and the tenants', async () => {
    for (const role of ['OPERATOR', 'AUDITOR'] as const) {
      const response = await api.gql<{ limitChangePreview: { tenantsAffected: number; total: Record<string, unknown>; tenants: Array<Record<string, unknown>> } }>(
        await api.token(role),
        QUERY,
        variables,
      );
      expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
      const preview = response.data!.limitChangePreview;
      expect(preview.tenantsAffected).toBe(1);
      expect(preview.total).toMatchObject({ demandUnits: 500, currentRefusedUnits: 0, recordedRefusedUnits: 0, limitedSeconds: 10 });
      expect(Math.abs((preview.total.refusedUnits as number) - 440) / 440).toBeLessThan(0.02);
      expect(preview.tenants[0]).toMatchObject({ tenantId: 'acme', currentSource: 'TIER', proposedLimit: { ratePerSecond: 5, burst: 10 }, currentLimit: { ratePerSecond: 100, burst: 200 } });
    }
  });

  it('refuses tenant roles, and answers bad input as BAD_USER_INPUT and an unknown tier by its code', async () => {
    const viewer = await api.gql(await api.token('TENANT_ADMIN', 'acme'), QUERY, variables);
    expect(viewer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const both = await api.gql(operator, '{ limitChangePreview(platformDefault: { dimension: INGEST, ratePerSecond: 5 }, tierLimit: { tierId: "gold", dimension: INGEST, ratePerSecond: 5 }) { tenantsAffected } }');
    expect(both.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const unknown = await api.gql(operator, '{ limitChangePreview(tierLimit: { tierId: "nope", dimension: INGEST, ratePerSecond: 5 }) { tenantsAffected } }');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('UNKNOWN_TIER');
  });
});
