import { describe, expect, it } from 'vitest';
import {
  assignTenantModel,
  assignTenantTier,
  clearTenantOverride,
  registerTenant,
  setTenantBranding,
  setTenantOverLimitPolicy,
  setTenantOverride,
} from '../../../src/control-plane/tenantCommands.ts';
import { given, SPEC_NOW, type GivenEvent } from '../../support/controlPlaneSpec.ts';

const gold: GivenEvent = { stream: 'tier-gold', type: 'TierDefined', data: { tierId: 'gold', name: 'Gold' } };
const silver: GivenEvent = { stream: 'tier-silver', type: 'TierDefined', data: { tierId: 'silver', name: 'Silver' } };
const acme: GivenEvent = { stream: 'tenant-acme', type: 'TenantRegistered', data: { tenantId: 'acme', tierId: 'silver' } };
const inOneHour = new Date(SPEC_NOW.getTime() + 3_600_000).toISOString();
const oneHourAgo = new Date(SPEC_NOW.getTime() - 3_600_000).toISOString();
const overrideUntil = (expiresAt: string | null): GivenEvent => ({
  stream: 'tenant-acme',
  type: 'TenantOverrideSet',
  data: { tenantId: 'acme', dimension: 'INGEST', previous: null, value: { ratePerSecond: 9000 }, expiresAt },
});

describe('registerTenant', () => {
  it('given its tier, registers the tenant on its own stream', () => {
    expect(given(silver).when(registerTenant, { tenantId: 'acme', tierId: 'silver' })).toEqual({
      stream: 'tenant-acme',
      events: [{ type: 'TenantRegistered', data: { tenantId: 'acme', tierId: 'silver' } }],
    });
  });

  it('registers a tenant without a tier (platform defaults)', () => {
    expect(given().when(registerTenant, { tenantId: 'acme' })).toMatchObject({ events: [{ data: { tenantId: 'acme', tierId: null } }] });
  });

  it('refuses an unknown tier, and a second registration', () => {
    expect(given().when(registerTenant, { tenantId: 'acme', tierId: 'gold' })).toMatchObject({ error: { kind: 'UnknownTier', field: 'tierId' } });
    expect(given(silver, acme).when(registerTenant, { tenantId: 'acme', tierId: 'silver' })).toMatchObject({
      error: { kind: 'TenantAlreadyRegistered', field: 'tenantId' },
    });
  });
});

describe('assignTenantTier', () => {
  it('moves the tenant and records the tier it left', () => {
    expect(given(gold, silver, acme).when(assignTenantTier, { tenantId: 'acme', tierId: 'gold', reason: 'upgrade' })).toEqual({
      stream: 'tenant-acme',
      events: [{ type: 'TenantTierAssigned', data: { tenantId: 'acme', previousTierId: 'silver', tierId: 'gold' } }],
      reason: 'upgrade',
    });
  });

  it('refuses an unknown tenant and an unknown tier', () => {
    expect(given(gold).when(assignTenantTier, { tenantId: 'acme', tierId: 'gold' })).toMatchObject({ error: { kind: 'UnknownTenant' } });
    expect(given(acme).when(assignTenantTier, { tenantId: 'acme', tierId: 'gold' })).toMatchObject({ error: { kind: 'UnknownTier' } });
  });
});

describe('setTenantOverride', () => {
  it('sets an audited override with an expiry', () => {
    expect(
      given(acme).when(setTenantOverride, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 9000, reason: 'migration weekend', expiresAt: inOneHour }),
    ).toEqual({
      stream: 'tenant-acme',
      events: [
        { type: 'TenantOverrideSet', data: { tenantId: 'acme', dimension: 'INGEST', previous: null, value: { ratePerSecond: 9000 }, expiresAt: inOneHour } },
      ],
      reason: 'migration weekend',
    });
  });

  it('carries the override in force as previous, but not one that has lapsed', () => {
    const input = { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 100, reason: 'again' };
    expect(given(acme, overrideUntil(null)).when(setTenantOverride, input)).toMatchObject({
      events: [{ data: { previous: { value: { ratePerSecond: 9000 }, expiresAt: null } } }],
    });
    expect(given(acme, overrideUntil(oneHourAgo)).when(setTenantOverride, input)).toMatchObject({ events: [{ data: { previous: null } }] });
  });

  it.each([
    ['an empty reason', { reason: '   ' }, 'InvalidInput', 'reason'],
    ['a reason over 2,000 characters', { reason: 'r'.repeat(2001) }, 'InvalidInput', 'reason'],
    ['an expiresAt in the past', { expiresAt: oneHourAgo }, 'InvalidInput', 'expiresAt'],
    ['an expiresAt of now', { expiresAt: SPEC_NOW.toISOString() }, 'InvalidInput', 'expiresAt'],
    ['an expiresAt that is not a date', { expiresAt: 'tomorrow' }, 'InvalidInput', 'expiresAt'],
    ['a rate of 1,000,001', { ratePerSecond: 1_000_001 }, 'InvalidLimit', 'ratePerSecond'],
    ['an unknown dimension', { dimension: 'STORAGE' }, 'UnknownDimension', 'dimension'],
  ])('refuses %s', (_name, change, kind, field) => {
    const input = { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 9000, reason: 'why', ...change };
    expect(given(acme).when(setTenantOverride, input)).toMatchObject({ error: { kind, field } });
  });

  it('refuses an unknown tenant', () => {
    expect(given().when(setTenantOverride, { tenantId: 'ghost', dimension: 'INGEST', ratePerSecond: 1, reason: 'x' })).toMatchObject({
      error: { kind: 'UnknownTenant', field: 'tenantId' },
    });
  });
});

describe('clearTenantOverride', () => {
  it('clears the override in force and records it', () => {
    expect(given(acme, overrideUntil(inOneHour)).when(clearTenantOverride, { tenantId: 'acme', dimension: 'INGEST', reason: 'done early' })).toEqual({
      stream: 'tenant-acme',
      events: [
        { type: 'TenantOverrideCleared', data: { tenantId: 'acme', dimension: 'INGEST', previous: { value: { ratePerSecond: 9000 }, expiresAt: inOneHour } } },
      ],
      reason: 'done early',
    });
  });

  it('refuses without a reason, and when the override has already lapsed', () => {
    expect(given(acme, overrideUntil(null)).when(clearTenantOverride, { tenantId: 'acme', dimension: 'INGEST', reason: '' })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'reason' },
    });
    expect(given(acme, overrideUntil(oneHourAgo)).when(clearTenantOverride, { tenantId: 'acme', dimension: 'INGEST', reason: 'x' })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'dimension' },
    });
  });
});

describe('assignTenantModel, setTenantBranding, setTenantOverLimitPolicy', () => {
  it('assigns a model, and clears it back to the tier default', () => {
    expect(given(acme).when(assignTenantModel, { tenantId: 'acme', model: 'gpt-4o-mini' })).toMatchObject({
      events: [{ type: 'TenantModelAssigned', data: { previous: null, model: 'gpt-4o-mini' } }],
    });
  });

  it('sets branding, and refuses a malformed one', () => {
    expect(given(acme).when(setTenantBranding, { tenantId: 'acme', branding: { productName: 'Acme Cloud' } })).toMatchObject({
      events: [{ type: 'TenantBrandingSet', data: { previous: null, branding: { productName: 'Acme Cloud' } } }],
    });
    expect(given(acme).when(setTenantBranding, { tenantId: 'acme', branding: { productName: 'x'.repeat(101) } })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'branding.productName' },
    });
  });

  it('chooses the API_REQUESTS policy; no other dimension has one', () => {
    expect(given(acme).when(setTenantOverLimitPolicy, { tenantId: 'acme', policy: 'STABLE_DOWNSAMPLE' })).toEqual({
      stream: 'tenant-acme',
      events: [{ type: 'TenantOverLimitPolicySet', data: { tenantId: 'acme', dimension: 'API_REQUESTS', previous: null, policy: 'STABLE_DOWNSAMPLE' } }],
    });
    expect(given(acme).when(setTenantOverLimitPolicy, { tenantId: 'acme', dimension: 'INGEST', policy: 'EXACT_REJECT' })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'dimension' },
    });
    expect(given(acme).when(setTenantOverLimitPolicy, { tenantId: 'acme', policy: 'DROP_ALL' })).toMatchObject({
      error: { kind: 'InvalidInput', field: 'policy' },
    });
  });
});
