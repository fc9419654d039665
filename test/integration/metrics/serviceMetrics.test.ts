// /metrics in the whole service: the Governor's batches reach the per-tenant counters, the command backlog
// gauge reads the backlog, projections report their lag, ledger appends are timed, and promtool finds
// nothing to lint in what a scrape returns.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSettings } from '../../../src/config.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';
import { startService, type Service } from '../../../src/service.ts';
import { OPERATOR } from '../../support/controlPlaneHarness.ts';

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

describe('metrics in the service (embedded PGlite)', () => {
  let dataDir: string;
  let service: Service;
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-metrics-'));
    service = await startService(readSettings({ GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_SERVICE: 'event-sources' }), pino({ level: 'silent' }));
    server = createServer(service, service.routes);
    baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
    // Starting the whole service on embedded PGlite (every migration, every projection) takes a while on a
    // busy two-core machine.
  }, 180_000);

  afterAll(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await service?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const scrape = async () => {
    const response = await fetch(`${baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    return response.text();
  };

  it('counts admissions per tenant, the command backlog, projection lag and ledger appends', async () => {
    const now = Date.now();
    for (let i = 0; i < 3; i++) service.governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 10, at: now });
    await service.governor.flush();
    expect(
      await service.commands.enqueue({ id: 'command-delivery' }, { tenantId: 'acme', commandId: 'c-1', deviceId: 'd-1', payload: { on: true } }),
    ).toMatchObject({ status: 'accepted' });
    expect(service.inferenceSpend.record('acme', 120, 30)).toEqual({ status: 'recorded' });

    const text = await scrape();
    const p = 'devicechain_event_sources_';
    expect(text).toContain(`${p}governance_admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="acme"} 30`);
    expect(text).toContain(`${p}governance_command_backlog{tenant="acme"} 1`);
    expect(text).toMatch(new RegExp(`${p}governance_command_backlog_ceiling\\{tenant="acme"\\} \\d+`));
    expect(text).toMatch(new RegExp(`${p}projection_lag_seconds\\{projection="admission-trends"\\} [\\d.]+`));
    expect(text).toMatch(new RegExp(`${p}ledger_append_duration_seconds_count\\{outcome="ok"\\} [1-9]`));
    expect(text).toContain(`${p}ai_inference_input_tokens_total 120`);
    expect(text).toContain(`${p}governance_name_overflow_in_use 0`);
    expect(text).toContain(`${p}governance_redis_fallback 0`);
    expect(text).toContain(`${p}process_cpu_seconds_total`);

    if (!hasPromtool) {
      console.warn('promtool is not installed: the /metrics lint is skipped.');
      return;
    }
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(lint.stdout + lint.stderr).toBe('');
  });
});
