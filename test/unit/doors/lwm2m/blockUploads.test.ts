import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockUploads, type BlockUploadLimits } from '../../../../src/doors/lwm2m/blockUploads.ts';

const KIB = Buffer.alloc(1024, 0x61);
const limits: BlockUploadLimits = { perHost: 2, maxUploads: 3, maxBufferedBytes: 10 * 1024, maxPayloadBytes: 4 * 1024, idleMs: 60_000 };
const block = (num: number, more: boolean) => ({ num, more, szx: 6 });

describe('BlockUploads (Block1 Sends in flight)', () => {
  it('assembles blocks that follow one another, and frees their bytes at the last', () => {
    const uploads = new BlockUploads(limits);
    expect(uploads.take('10.0.0.1', '10.0.0.1:5000', 'dp', block(0, true), KIB, 0)).toEqual({ status: 'continue' });
    expect(uploads.take('10.0.0.1', '10.0.0.1:5000', 'dp', block(1, true), KIB, 1)).toEqual({ status: 'continue' });
    expect(uploads.stats()).toEqual({ uploads: 1, bufferedBytes: 2048, expired: 0 });
    const last = uploads.take('10.0.0.1', '10.0.0.1:5000', 'dp', block(2, false), Buffer.from('end'), 2);
    expect(last.status).toBe('complete');
    if (last.status === 'complete') expect(last.payload.length).toBe(2048 + 3);
    expect(uploads.stats()).toEqual({ uploads: 0, bufferedBytes: 0, expired: 0 });
  });

  it('answers 4.13 as soon as the blocks pass the payload cap, and drops the upload', () => {
    const uploads = new BlockUploads(limits);
    for (let num = 0; num < 4; num++) expect(uploads.take('h', 'h:1', 'dp', block(num, true), KIB, num).status).toBe('continue');
    expect(uploads.take('h', 'h:1', 'dp', block(4, true), KIB, 4)).toEqual({ status: 'too-large' });
    expect(uploads.stats()).toMatchObject({ uploads: 0, bufferedBytes: 0 });
    // A block far ahead is past the cap by its offset alone.
    expect(uploads.take('h', 'h:1', 'dp', block(4_000, true), KIB, 5)).toEqual({ status: 'too-large' });
  });

  it('bounds uploads per host and in all (5.03 with a retry hint), and a finished upload makes room', () => {
    const uploads = new BlockUploads(limits);
    expect(uploads.take('a', 'a:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.take('a', 'a:2', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    const third = uploads.take('a', 'a:3', 'dp', block(0, true), KIB, 1_000);
    expect(third).toMatchObject({ status: 'busy', retryAfterSeconds: 59, reason: 'more than 2 uploads in flight from one address' });
    expect(uploads.take('b', 'b:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.take('c', 'c:1', 'dp', block(0, true), KIB, 0)).toMatchObject({ status: 'busy', reason: 'more than 3 uploads in flight' });
    expect(uploads.take('a', 'a:1', 'dp', block(1, false), KIB, 0).status).toBe('complete');
    expect(uploads.take('c', 'c:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.stats().uploads).toBe(3);
  });

  it('bounds the bytes all uploads hold together', () => {
    const uploads = new BlockUploads({ ...limits, perHost: 10, maxUploads: 10, maxBufferedBytes: 3 * 1024 });
    for (let num = 0; num < 3; num++) expect(uploads.take('a', 'a:1', 'dp', block(num, true), KIB, 0).status).toBe('continue');
    expect(uploads.take('b', 'b:1', 'dp', block(0, true), KIB, 0)).toMatchObject({ status: 'busy', reason: `uploads in flight hold ${3 * 1024} bytes` });
    expect(uploads.stats()).toMatchObject({ uploads: 1, bufferedBytes: 3 * 1024 });
  });

  it('answers 4.08 to a block that does not follow, 4.00 to a block of the wrong size, and starts again at block 0', () => {
    const uploads = new BlockUploads(limits);
    expect(uploads.take('a', 'a:1', 'dp', block(1, true), KIB, 0)).toEqual({ status: 'incomplete' });
    expect(uploads.take('a', 'a:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.take('a', 'a:1', 'dp', block(2, true), KIB, 0)).toEqual({ status: 'incomplete' });
    expect(uploads.take('a', 'a:1', 'dp', block(1, true), Buffer.alloc(10), 0).status).toBe('bad-block');
    expect(uploads.take('a', 'a:1', 'dp', { num: 0, more: true, szx: 7 }, KIB, 0).status).toBe('bad-block');
    // Block 0 again replaces the upload: one in flight, its bytes once.
    expect(uploads.take('a', 'a:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.stats()).toMatchObject({ uploads: 1, bufferedBytes: 1024 });
    // Smaller blocks on the way are allowed: 1024 bytes are 2 blocks of 512.
    expect(uploads.take('a', 'a:1', 'dp', { num: 2, more: false, szx: 5 }, Buffer.from('x'), 0).status).toBe('complete');
  });

  it(`drops an upload that no block reached for idleMs, and frees its place and bytes`, () => {
    const uploads = new BlockUploads(limits);
    expect(uploads.take('a', 'a:1', 'dp', block(0, true), KIB, 0).status).toBe('continue');
    expect(uploads.take('a', 'a:2', 'dp', block(0, true), KIB, 30_000).status).toBe('continue');
    uploads.expire(59_999);
    expect(uploads.stats()).toEqual({ uploads: 2, bufferedBytes: 2048, expired: 0 });
    uploads.expire(60_000);
    expect(uploads.stats()).toEqual({ uploads: 1, bufferedBytes: 1024, expired: 1 });
    expect(uploads.take('a', 'a:1', 'dp', block(1, true), KIB, 60_001)).toEqual({ status: 'incomplete' });
    expect(uploads.take('a', 'a:3', 'dp', block(0, true), KIB, 60_001).status).toBe('continue');
  });
});

describe('BlockUploads, property-based', () => {
  it('never holds more uploads or bytes than its bounds, whatever blocks come in whatever order', () => {
    let runs = 0;
    let steps = 0;
    const small: BlockUploadLimits = { perHost: 2, maxUploads: 4, maxBufferedBytes: 3 * 1024, maxPayloadBytes: 5 * 1024, idleMs: 1_000 };
    const step = fc.record({
      host: fc.integer({ min: 0, max: 3 }),
      port: fc.integer({ min: 0, max: 3 }),
      num: fc.integer({ min: 0, max: 7 }),
      more: fc.boolean(),
      szx: fc.integer({ min: 5, max: 7 }),
      lastBytes: fc.integer({ min: 0, max: 1024 }),
      laterMs: fc.integer({ min: 0, max: 600 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (blocks) => {
        runs++;
        const uploads = new BlockUploads(small);
        let nowMs = 0;
        for (const each of blocks) {
          steps++;
          nowMs += each.laterMs;
          const size = 2 ** (each.szx + 4);
          const payload = Buffer.alloc(each.more ? size : Math.min(each.lastBytes, size));
          const taken = uploads.take(`10.0.0.${each.host}`, `10.0.0.${each.host}:${each.port}`, 'dp', { num: each.num, more: each.more, szx: each.szx }, payload, nowMs);
          if (taken.status === 'complete') expect(taken.payload.length).toBeLessThanOrEqual(small.maxPayloadBytes);
          const stats = uploads.stats();
          expect(stats.uploads).toBeLessThanOrEqual(small.maxUploads);
          expect(stats.bufferedBytes).toBeLessThanOrEqual(small.maxBufferedBytes);
          expect(stats.bufferedBytes).toBeGreaterThanOrEqual(0);
        }
        uploads.expire(nowMs + small.idleMs);
        expect(uploads.stats()).toMatchObject({ uploads: 0, bufferedBytes: 0 });
      }),
      { numRuns: 2000 },
    );
    console.log(`block sequences: ${runs} runs completed, ${steps} blocks`);
    expect(runs).toBe(2000);
  });
});
