// The limit preview on PostgreSQL: a tenant sent a recorded pattern through the Governor and the ledger
// Recorder is previewed against a lower limit, and the refused units match a count worked by hand. The first
// half of the pattern is in the admission-demand read model, the second only in the ledger after the
// projection's checkpoint, so the answers read both; the same answer comes from the ledger alone and from a
// rebuilt read model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresOnly } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, SETUP_TIMEOUT_MS, type ControlPlaneHarness } from '../../support/controlPlaneHarness.ts';
import { Governor } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createReadModelLimitSource, loadTenantGovernance } from '../../../src/control-plane/index.ts';
import { demandRetentionDays, InvalidPreview, previewLimitChange, pruneDemand } from '../../../src/limit-preview/index.ts';
import { spawnTs } from '../../support/spawnTs.ts';
import { waitFor } from '../../support/waitFor.ts';
import { startProjections } from '../../../src/ledger/projectionSet.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import type { Db } from '../../../src/db/db.ts';
import { admissionDemandProjection } from '../../../projections/admissionDemand.ts';
import { addMinute } from '../../../src/limit-preview/demandSeconds.ts';
import { forEachOpenRecord } from '../../../src/limit-preview/openDemand.ts';

/** The demand projection's checkpoint is at or past every event committed before this call. */
async function demandPastHead(db: Db): Promise<boolean> {
  const { rows } = await db.query<{ behind: boolean }>(
    `SELECT coalesce((SELECT (tx_id, global_position) > (c.commit_position::text::xid8, c.prepare_position)
                        FROM gl_events ORDER BY tx_id DESC, global_position DESC LIMIT 1), false) AS behind
       FROM gl_checkpoints c WHERE c.projection = 'admission-demand' AND c.commit_position IS NOT NULL`,
  );
  return rows.length === 1 && !rows[0]!.behind;
}

/** The read model's rows, in key order, as hex. */
async function demandRows(db: Db): Promise<string[][]> {
  const { rows } = await db.query<{ row: string[] }>(
    "SELECT ARRAY[dimension, tenant_id, minute_start::text, allowance, encode(seconds, 'hex')] AS row FROM gl_demand_seconds ORDER BY dimension, tenant_id, minute_start, allowance",
  );
  return rows.map((row) => row.row);
}

/**
 * Every recorded second of the read model, wherever it lies (a tenant's minute row or an open minute's packed row,
 * src/limit-preview/openDemand.ts), summed per (dimension, tenant, allowance, second): the same whichever pages
 * wrote them.
 */
async function demandSeconds(db: Db): Promise<string[]> {
  const seconds = new Map<string, number[]>();
  const add = (key: string, minuteStart: number, bytes: Uint8Array, start: number, end: number) => {
    const sums = new Float64Array(240);
    const present = new Uint8Array(60);
    expect(addMinute(bytes, start, end, sums, present)).toBe(true);
    for (let offset = 0; offset < 60; offset++) {
      if (present[offset] === 0) continue;
      const id = `${key} ${minuteStart + offset}`;
      const before = seconds.get(id) ?? [0, 0, 0, 0];
      seconds.set(id, before.map((value, i) => value + sums[offset * 4 + i]!));
    }
  };
  const rows = await db.query<{ dimension: string; tenant_id: string; minute_start: string; allowance: string; seconds: Uint8Array }>('SELECT * FROM gl_demand_seconds');
  for (const row of rows.rows) add(`${row.dimension} ${row.tenant_id} ${row.allowance}`, Number(row.minute_start), row.seconds, 0, row.seconds.length);
  const open = await db.query<{ dimension: string; minute_start: string; records: Uint8Array }>('SELECT dimension, minute_start, records FROM gl_demand_open');
  for (const row of open.rows) {
    forEachOpenRecord(row.records, { minuteStart: Number(row.minute_start), dimension: row.dimension }, (tenantId, allowance, records, start, end) => add(`${row.dimension} ${tenantId} ${allowance}`, Number(row.minute_start), records, start, end));
  }
  return [...seconds].map(([id, sums]) => `${id}: ${sums.join(' ')}`).sort();
}

describe.skipIf(!postgresOnly)('limit preview on PostgreSQL (DATABASE_URL)', () => {
  let harness: ControlPlaneHarness;
  let governor: Governor;
  // Whole seconds two minutes back, so the range is past and its summaries recorded within the preview's slack.
  const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
  const from = new Date(fromMs);
  const to = new Date(fromMs + 60_000);

  beforeAll(async () => {
    harness = await openControlPlane(postgresOnly!, { project: true });
    const cp = harness.controlPlane;
    expect((await cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' })).status).toBe('applied');
    expect((await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 })).status).toBe('applied');
    expect((await cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' })).status).toBe('applied');
    expect((await cp.registerTenant(OPERATOR, { tenantId: 'quiet', tierId: 'gold' })).status).toBe('applied');
    await harness.caughtUp();
    governor = new Governor({ limitSource: createReadModelLimitSource(harness.db), recorder: createLedgerRecorder(harness.store, { referenceKeys: true }) });
    const { tenants, platformDefaults } = await loadTenantGovernance(harness.db, ['acme', 'quiet'], new Date());
    governor.learnLimits(tenants.values(), platformDefaults);
    // 20 readings a second for 60 s, one a message every 50 ms; 'quiet' sends 1 a second. The first 30 s are
    // applied by the demand projection, which then stops: the last 30 s stay after its checkpoint.
    const send = async (fromSecond: number, toSecond: number) => {
      for (let second = fromSecond; second < toSecond; second++) {
        for (let i = 0; i < 20; i++) {
          const decision = governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + second * 1000 + i * 50 });
          expect(decision.admitted).toBe(true);
        }
        governor.admit({ tenant: 'quiet', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + second * 1000 });
      }
      await governor.flush();
    };
    await send(0, 30);
    const demand = await startProjections(harness.db, harness.store, [admissionDemandProjection], { retryDelayMs: 50 });
    try {
      await waitFor(() => demandPastHead(harness.db), { timeoutMs: 30_000, description: 'the demand projection past the first 30 s' });
    } finally {
      await demand.close();
    }
    await send(30, 60);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await governor?.close();
    await harness?.close();
  });

  it('previews 20/s for 60 s against 5/s (burst 10): the refused units match the count worked by hand within 2%', async () => {
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    // By hand: the bucket starts with 10 and refills 5 a second, so of 1,200 readings over 60 s about
    // 10 + 5 x 60 = 310 are admitted and 890 refused.
    const acme = preview.tenants.find((tenant) => tenant.tenantId === 'acme')!;
    expect(Math.abs(acme.refusedUnits - 890) / 890).toBeLessThan(0.02);
    expect(Math.abs(acme.refusedMessages - 890) / 890).toBeLessThan(0.02);
    expect(acme).toMatchObject({ demandUnits: 1200, demandMessages: 1200, currentRefusedUnits: 0, recordedRefusedUnits: 0, currentLimitedSeconds: 0 });
    expect(acme.currentLimit).toEqual({ ratePerSecond: 100, burst: 200 });
    expect(acme.proposedLimit).toEqual({ ratePerSecond: 5, burst: 10 });
    // Every second after the first burst refuses something; the worst minute is the only one.
    expect(acme.limitedSeconds).toBeGreaterThanOrEqual(59);
    expect(acme.worstMinute?.refusedUnits).toBeGreaterThan(0);
    // 'quiet' sends 1/s: it is affected (its limit moves) but refused nothing.
    expect(preview.tenants.find((tenant) => tenant.tenantId === 'quiet')).toMatchObject({ refusedUnits: 0, demandUnits: 60 });
    expect(preview.tenantsAffected).toBe(2);
    expect(preview.total.refusedUnits).toBe(acme.refusedUnits);
    expect(preview.total.demandUnits).toBe(1260);
  });

  it('answers the range as a series for a chart: minute buckets whose sums are the totals', async () => {
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    expect(preview.proposedLimit).toEqual({ ratePerSecond: 5, burst: 10 });
    // The range's 60 s lie in one or two minutes of the clock: a bucket each, starting at the minute.
    const minutes = fromMs % 60_000 === 0 ? 1 : 2;
    expect(preview.series.map((point) => point.seconds)).toEqual(Array(minutes).fill(60));
    expect(preview.series[0]!.start).toEqual(new Date(fromMs - (fromMs % 60_000)));
    const total = (field: 'demandUnits' | 'refusedUnits' | 'currentRefusedUnits' | 'recordedRefusedUnits') => preview.series.reduce((sum, point) => sum + point[field], 0);
    expect([total('demandUnits'), total('refusedUnits'), total('currentRefusedUnits'), total('recordedRefusedUnits')]).toEqual([1260, preview.total.refusedUnits, 0, 0]);
    expect(Math.max(...preview.series.map((point) => point.peakUnitsPerSecond))).toBe(20);
    // A week is cut into at most 500 buckets of whole minutes (21 minutes each), the recorded minute in one of them.
    const week = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from: new Date(to.getTime() - 7 * 86_400_000), to });
    expect(week.series.length).toBeLessThanOrEqual(500);
    expect(new Set(week.series.map((point) => point.seconds))).toEqual(new Set([21 * 60]));
    expect(week.series.reduce((sum, point) => sum + point.demandUnits, 0)).toBe(1260);
    expect(week.series.reduce((sum, point) => sum + point.refusedUnits, 0)).toBe(week.total.refusedUnits);
  });

  it('answers the same from the read model and the ledger after its checkpoint, from the ledger alone, and from a rebuilt read model, which equals the live one', async () => {
    const query = { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to };
    expect((await demandRows(harness.db)).length).toBeGreaterThan(0);
    const both = await previewLimitChange(harness.db, query);
    expect(both.total.demandUnits).toBe(1260);

    const demand = await startProjections(harness.db, harness.store, [admissionDemandProjection], { retryDelayMs: 50 });
    try {
      await waitFor(() => demandPastHead(harness.db), { timeoutMs: 30_000, description: 'the demand projection past the last 30 s' });
    } finally {
      await demand.close();
    }
    const live = await demandSeconds(harness.db);
    expect(live.length).toBeGreaterThan(0);
    expect(await previewLimitChange(harness.db, query)).toEqual(both);

    // The read model emptied and its checkpoint at the start: everything is read from the ledger.
    await harness.db.exec("DELETE FROM gl_demand_seconds; DELETE FROM gl_demand_open; UPDATE gl_checkpoints SET commit_position = NULL, prepare_position = NULL WHERE projection = 'admission-demand'");
    expect(await previewLimitChange(harness.db, query)).toEqual(both);

    await rebuildProjection(harness.db, harness.store, admissionDemandProjection);
    expect(await demandSeconds(harness.db)).toEqual(live);
    expect(await previewLimitChange(harness.db, query)).toEqual(both);
  }, 120_000);

  it('prunes demand older than its retention (the minute trends\', at least 31 days), and only that', async () => {
    expect(demandRetentionDays(7)).toBe(31);
    expect(demandRetentionDays(90)).toBe(90);
    const nowSecond = Math.floor(Date.now() / 1000);
    const old = nowSecond - 32 * 86_400;
    await harness.db.query("INSERT INTO gl_demand_seconds VALUES ('API_REQUESTS', 'old', $1, '', '\\x000101'), ('API_REQUESTS', 'old', $2, '', '\\x000101')", [
      old - (old % 60),
      nowSecond - (nowSecond % 60) - 30 * 86_400,
    ]);
    const before = (await demandRows(harness.db)).length;
    expect(await pruneDemand(harness.db, 31)).toBe(1);
    const after = await demandRows(harness.db);
    expect(after).toHaveLength(before - 1);
    expect(after.filter((row) => row[1] === 'old')).toHaveLength(1);
  });

  it('an override of one tenant replays that tenant only; a limit no lower refuses nothing', async () => {
    const preview = await previewLimitChange(harness.db, { override: { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 50 }, from, to });
    expect(preview.tenants.map((tenant) => tenant.tenantId)).toEqual(['acme']);
    expect(preview.total.refusedUnits).toBe(0);
  });

  it('refuses a range over 31 days, a count ceiling, an unknown tier and two levels at once, as typed errors', async () => {
    const bad = [
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5 }, from: new Date(fromMs - 40 * 86_400_000), to },
      { tierLimit: { tierId: 'gold', dimension: 'UNDELIVERED_COMMANDS', ceiling: 5 }, from, to },
      { tierLimit: { tierId: 'nope', dimension: 'INGEST', ratePerSecond: 5 }, from, to },
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5 }, platformDefault: { dimension: 'INGEST', ratePerSecond: 5 } },
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: -5 } },
    ];
    for (const query of bad) await expect(previewLimitChange(harness.db, query)).rejects.toBeInstanceOf(InvalidPreview);
  });

  it('governance limits preview prints the same answer as a table', async () => {
    const expected = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    const cli = spawnTs(
      ['src/cli.ts', 'limits', 'preview', '--tier', 'gold', '--dimension', 'INGEST', '--rate', '5', '--burst', '10', '--from', from.toISOString(), '--to', to.toISOString()],
      harness.testDb.env!,
    );
    expect(await cli.exited, cli.output()).toBe(0);
    const acmeLine = cli.output().split('\n').find((line) => line.startsWith('acme '))!;
    expect(acmeLine.split(/\s+/)).toContain(String(expected.tenants[0]!.refusedUnits));
    expect(cli.output()).toMatch(/^total \(2 tenants\)/m);
    const usage = spawnTs(['src/cli.ts', 'limits', 'preview', '--tier', 'gold', '--platform', '--dimension', 'INGEST', '--rate', '5'], harness.testDb.env!);
    expect(await usage.exited).toBe(2);
    expect(usage.output()).toContain('give exactly one of --tenant, --tier and --platform');
  }, 60_000);
});
