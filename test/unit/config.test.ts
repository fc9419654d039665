import { describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';

describe('readSettings', () => {
  it('expires queued commands after an hour unless GOVERNANCE_COMMAND_TTL_SECONDS says otherwise', () => {
    expect(readSettings({}).commandTtlSeconds).toBe(3600);
    expect(readSettings({ GOVERNANCE_COMMAND_TTL_SECONDS: ' 900 ' }).commandTtlSeconds).toBe(900);
  });

  it('refuses a number that is not a whole positive count, naming the variable, instead of meaning "never"', () => {
    for (const bad of ['0', '-5', '1.5', 'one hour', 'Infinity']) {
      expect(() => readSettings({ GOVERNANCE_COMMAND_TTL_SECONDS: bad })).toThrow(/GOVERNANCE_COMMAND_TTL_SECONDS must be a whole number/);
    }
    expect(() => readSettings({ EDGE_IP_RATE_PER_SECOND: '0' })).toThrow(/EDGE_IP_RATE_PER_SECOND/);
  });
});
