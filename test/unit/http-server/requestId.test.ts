import { describe, expect, it } from 'vitest';
import { freshRequestId, requestIdOf } from '../../../src/http-server/requestId.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request IDs', () => {
  it('a fresh one is a random UUID (version 4, RFC 9562 variant), distinct across blocks', () => {
    const seen = new Set<string>();
    // Several blocks (1,024 IDs each).
    for (let i = 0; i < 3_000; i++) {
      const id = freshRequestId();
      expect(id).toMatch(UUID_V4);
      seen.add(id);
    }
    expect(seen.size).toBe(3_000);
  });

  it('every hex digit turns up in every free position', () => {
    const digits = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 2_000; i++) [...freshRequestId()].forEach((char, at) => digits[at]!.add(char));
    for (const at of [0, 7, 9, 12, 15, 17, 20, 22, 24, 35]) expect(digits[at]!.size, `position ${at}`).toBe(16);
    expect([...digits[14]!]).toEqual(['4']);
    expect([...digits[19]!].sort()).toEqual(['8', '9', 'a', 'b']);
  });

  it("keeps a caller's sane ID and replaces anything else", () => {
    expect(requestIdOf('trace-42:abc/def+x=1')).toBe('trace-42:abc/def+x=1');
    for (const given of [undefined, '', 'a b', 'x'.repeat(129), 'bad\u0007id', ['one', 'two']]) expect(requestIdOf(given)).toMatch(UUID_V4);
  });
});
