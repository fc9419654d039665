// /readyz answers even when a check never does (a database cut off by the network refuses nothing): within
// READINESS_CHECK_TIMEOUT_MS, 503, naming the check that did not answer; a check that cannot reach the database
// is reported in the database check's words, once.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { StorageUnavailable } from '../../../src/db/storageUnavailable.ts';
import { handleReadyz, READINESS_CHECK_TIMEOUT_MS } from '../../../src/http-server/health.ts';

function capture(): { res: ServerResponse; answer: Promise<{ status: number; body: { reasons?: string[] } }> } {
  let resolve!: (value: { status: number; body: { reasons?: string[] } }) => void;
  const answer = new Promise<{ status: number; body: { reasons?: string[] } }>((done) => (resolve = done));
  let status = 0;
  const res = {
    writeHead(code: number) {
      status = code;
      return res;
    },
    end(text: string) {
      resolve({ status, body: JSON.parse(text) as { reasons?: string[] } });
      return res;
    },
  } as unknown as ServerResponse;
  return { res, answer };
}

describe('handleReadyz', () => {
  it('answers 503 within the timeout when a check never answers', async () => {
    const { res, answer } = capture();
    const started = Date.now();
    void handleReadyz([() => new Promise<string | null>(() => {}), async () => null], res);
    const { status, body } = await answer;
    expect(status).toBe(503);
    expect(body.reasons).toEqual([`a readiness check did not answer within ${READINESS_CHECK_TIMEOUT_MS / 1000} s`]);
    expect(Date.now() - started).toBeLessThan(READINESS_CHECK_TIMEOUT_MS + 1_000);
  });

  it('names a check that could not reach the database as the database being unavailable, once', async () => {
    const { res, answer } = capture();
    await handleReadyz(
      [async () => 'the database is unavailable', () => Promise.reject(new StorageUnavailable(new Error('Connection terminated')))],
      res,
    );
    expect(await answer).toEqual({ status: 503, body: { status: 'not ready', reasons: ['the database is unavailable'] } });
  });
});
