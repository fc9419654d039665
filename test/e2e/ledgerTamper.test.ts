// The running service reports an altered ledger and keeps serving: a superuser changes an event's data (the
// append-only trigger out of the way), the service's periodic verify names it in a log line, counts it on
// governance_ledger_verification_failures_total, and /readyz stays ready.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService } from '../../src/service.ts';
import { serviceModes } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

describe.each(serviceModes('e2e_tamper'))('the service on an altered ledger ($name)', (mode) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
  });

  it('logs the altered event, counts it on the metric, and stays ready', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'gl-e2e-tamper-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    await mode.prepare();
    cleanups.push(() => mode.dispose());
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const settings = readSettings({ GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_CHECKPOINT_SECONDS: '1', GOVERNANCE_LEDGER_VERIFY_SECONDS: '2', ...mode.env });
    const service = await startService(settings, pino({ level: 'info' }, sink));
    const server = createServer(service, service.routes);
    const baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
    });

    const victim = randomUUID();
    await service.store.append(`tamper-${randomUUID()}`, [{ id: victim, type: 'TamperTestEvent', data: { limit: 10 } }]);
    await waitFor(() => lines.some((line) => line.msg === 'ledger verified' && String(line.summary).includes('events')), {
      timeoutMs: 60_000,
      description: 'a verify of the ledger holding the event',
    });
    await waitFor(
      async () =>
        (await service.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM gl_merkle_checkpoints c JOIN gl_merkle_leaves l ON l.leaf_index < c.tree_size WHERE l.event_id = $1`, [victim])).rows[0]!.n !== '0',
      { timeoutMs: 60_000, description: 'a signed checkpoint covering the event' },
    );

    await service.db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query(`UPDATE gl_events SET data = '{"limit": 1000000}' WHERE event_id = $1`, [victim]);
    });
    await waitFor(() => lines.some((line) => line.msg === 'ledger verification failed: the stored ledger was altered' && line.eventId === victim), {
      timeoutMs: 60_000,
      description: 'the log line naming the altered event',
    });
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/governance_ledger_verification_failures_total [1-9]/);
    const ready = await fetch(`${baseUrl}/readyz`);
    expect(ready.status).toBe(200);
  });
});
