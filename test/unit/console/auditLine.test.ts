// The audit timeline's lines in words (console/src/auditLine.ts): a registration read "TENANT_REGISTERED on tenant
// X: – → –", with neither a before nor an after; it now says what happened.
import { expect, it } from 'vitest';
import { approvalLine, beforeAfter, level, type Change } from '../../../console/src/auditLine.ts';

const change = (fields: Partial<Change>): Change => ({
  at: '2026-12-01T00:00:00Z',
  actor: 'alice@ops',
  reason: null,
  kind: 'OVERRIDE_SET',
  dimension: null,
  tenantId: null,
  tierId: null,
  previousTierId: null,
  previous: null,
  value: null,
  policy: null,
  previousPolicy: null,
  expiresAt: null,
  ...fields,
});

it('says what a registration did, with or without a tier', () => {
  expect(beforeAfter(change({ kind: 'TENANT_REGISTERED', tenantId: 'acme', tierId: 'standard' }))).toBe('registered on tier standard');
  expect(beforeAfter(change({ kind: 'TENANT_REGISTERED', tenantId: 'acme' }))).toBe('registered with no tier (platform defaults apply)');
  expect(level(change({ kind: 'TENANT_REGISTERED', tenantId: 'acme' }))).toBe('tenant acme');
});

it('shows a tier assignment from tier to tier, and a limit from value to value', () => {
  expect(beforeAfter(change({ kind: 'TENANT_TIER_ASSIGNED', tenantId: 'acme', tierId: 'gold' }))).toBe('no tier → gold');
  expect(beforeAfter(change({ kind: 'TENANT_TIER_ASSIGNED', tenantId: 'acme', tierId: 'gold', previousTierId: 'standard' }))).toBe('standard → gold');
  const value = { ratePerSecond: 500, burst: 1000, ceiling: null };
  expect(beforeAfter(change({ kind: 'OVERRIDE_SET', tenantId: 'acme', dimension: 'INGEST', value }))).toBe('– → 500/s, burst 1,000');
  expect(level(change({ kind: 'TIER_LIMIT_SET', tierId: 'gold' }))).toBe('tier gold');
  expect(level(change({ kind: 'PLATFORM_DEFAULT_SET' }))).toBe('platform');
});

it('names proposer and approver with their reasons for a change that came from a request, and nothing otherwise', () => {
  expect(approvalLine(change({}))).toBe('');
  const line = approvalLine(
    change({
      approval: {
        proposedBy: 'alice@ops',
        proposedAt: '2026-12-01T00:00:00Z',
        proposerReason: 'gold is oversold',
        effectiveFrom: '2026-12-01T00:00:00Z',
        approvedBy: 'bob@ops',
        approvedAt: '2026-12-01T01:00:00Z',
        approverReason: 'agreed',
      },
    }),
  );
  expect(line).toMatch(/^proposed by alice@ops at .+ \(“gold is oversold”\); approved by bob@ops at .+ \(“agreed”\)$/);
  const scheduled = approvalLine(
    change({
      approval: { proposedBy: 'alice@ops', proposedAt: '2026-12-01T00:00:00Z', proposerReason: null, effectiveFrom: '2026-12-02T00:00:00Z', approvedBy: null, approvedAt: null, approverReason: null },
    }),
  );
  expect(scheduled).toMatch(/^proposed by alice@ops at .+; scheduled for .+$/);
});
