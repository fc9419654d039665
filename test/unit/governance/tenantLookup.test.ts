// The Governor remembers the last tenant name it found, so a run of admits for one tenant skips the Map lookup.
// A name that leaves (an idle unconfirmed name giving its place away) must not be found through that memory.
import { afterEach, describe, expect, it } from 'vitest';
import { Governor } from '../../../src/governance/governor.ts';
import type { AdmitRequest } from '../../../src/governance/governor.ts';
import { MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
let clock = T0;
let gov: Governor | null = null;

afterEach(async () => {
  await gov?.close();
  gov = null;
  clock = T0;
});

const http = (tenant: string): AdmitRequest => ({ tenant, dimension: 'INGEST', allowance: 'HTTP', units: 1, at: T0 });

describe('Governor: the last tenant found', () => {
  it('meters a run of admits for one name on that name’s state', () => {
    gov = new Governor({ limitSource: new MemoryLimitSource(), now: () => clock, clockReadEveryAdmits: 1 });
    const first = gov.admit(http('a'));
    const second = gov.admit(http('a'));
    expect(second.remaining).toBe(first.remaining - 1);
    expect(gov.admit(http('b')).remaining).toBe(first.remaining);
    expect(gov.admit(http('a')).remaining).toBe(first.remaining - 2);
  });

  it('forgets a name evicted after it was found, so it competes for a place again', () => {
    gov = new Governor({
      limitSource: new MemoryLimitSource(),
      now: () => clock,
      clockReadEveryAdmits: 1,
      maxUnconfirmedNames: 1,
      unconfirmedIdleMs: 60_000,
    });
    expect(gov.admit(http('a')).scope).toBe('tenant');
    expect(gov.admit(http('a')).scope).toBe('tenant'); // found this time, so remembered
    clock += 70_000;
    // 'b' is not known yet, so 'a' is still the last name found when it gives 'b' its place.
    expect(gov.admit(http('b')).scope).toBe('tenant');
    expect(gov.admit(http('a')).scope).toBe('overflow');
    expect(gov.stats()).toMatchObject({ tenantStates: 1, unconfirmedNames: 1 });
  });
});
