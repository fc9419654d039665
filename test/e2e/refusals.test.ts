// Observable pressure, not silent loss: a tenant flooded with refusals, nearly all on the HTTP ingest door's
// per-message charge (before the body is decoded, so they carry no units), is found wherever an operator looks:
// /metrics, shedTrend, first in topShedders, the console's Trends chart (Chromium), the Grafana dashboard's
// panel query and a firing alert (promtool, fed the counters the running service exported).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { packagePath } from '../../src/packageRoot.ts';
import { CHROMIUM, ensureConsoleBuilt, launchChromium, signIn } from '../support/consoleBrowser.ts';
import { serviceClient, type ServiceClient } from '../support/serviceClient.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

const EMBEDDED = { name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} };
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
if (!hasPromtool) console.warn('promtool is not installed (Debian package `prometheus`): the refusal flood suite is skipped');
if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the refusal flood suite is skipped');

/** Requests in acme's flood: enough to outnumber globex's refusals many times, few enough that promtool's humanize prints them whole. */
const FLOOD_REQUESTS = 400;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of the named counters in a /metrics text. */
function samplesOf(text: string, suffixes: readonly string[]): Sample[] {
  const samples: Sample[] = [];
  for (const match of text.matchAll(/^(devicechain_\w+?)\{([^}]*)\} (\S+)$/gm)) {
    const name = match[1]!;
    if (!suffixes.some((suffix) => name.endsWith(suffix))) continue;
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1]!, label[2]!]));
    samples.push({ name, labels, value: Number(match[3]) });
  }
  return samples;
}

describe.skipIf(!hasPromtool || !CHROMIUM)('a flood refused only per message shows wherever operators look', () => {
  let running: RunningService;
  let api: ServiceClient;
  let browser: Browser;
  let workDir: string;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    running = await startServiceIn(EMBEDDED);
    api = await serviceClient(running);
    browser = await launchChromium();
    workDir = await mkdtemp(path.join(tmpdir(), 'gl-refusals-'));
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('finds the tenant in /metrics, in shedTrend, first in topShedders, in the console chart, in the dashboard panel and in a firing alert', async () => {
    const operator = api.as('OPERATOR');
    const keys = new Map<string, string>();
    for (const tenantId of ['acme', 'globex']) {
      await operator(`mutation { registerTenant(input: { tenantId: "${tenantId}" }) { __typename } }`);
      const set = await operator<{ setTenantOverride: { __typename: string } }>(
        `mutation { setTenantOverride(input: { tenantId: "${tenantId}", dimension: INGEST, ratePerSecond: 5, burst: 10, reason: "e2e flood" }) { __typename } }`,
      );
      expect(set.setTenantOverride.__typename).toBe('Applied');
      const issued = await operator<{ issueIngestKey: { key: string } }>(`mutation { issueIngestKey(input: { tenantId: "${tenantId}" }) { ... on IngestKeyIssued { key } } }`);
      keys.set(tenantId, issued.issueIngestKey.key);
    }
    await running.service.projections.waitForCaughtUp();
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000);
    const post = (tenantId: string, readings: number) =>
      fetch(`${running.baseUrl}/v1/ingest/${tenantId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-key': keys.get(tenantId)! },
        body: JSON.stringify({ readings: Array.from({ length: readings }, (_, i) => ({ deviceId: 'pump-1', measurements: { [`m${i}`]: i } })) }),
      });
    // First contact, then the tenants' own limits are in force.
    expect((await post('acme', 1)).status).toBe(202);
    expect((await post('globex', 1)).status).toBe(202);
    await running.service.governor.loadsSettled();

    // acme: one reading a request, 10 at a time, against 5/s with a burst of 10. The message charge and the
    // readings charge draw on buckets of the same numbers, the message charge first, so nearly every refusal is
    // on the message charge, before decoding: 429s that carry no units. Not every one: both charges are metered
    // at the request's arrival, but the readings charge is decided when its body is in, and fetch sends a body
    // apart from its headers, so under load the readings bucket meets those instants in another order than the
    // message bucket. A bucket adds nothing for an instant earlier than its last, so a full bucket loses the
    // refill between the two (docs/governance-model.md, "A reading is one stored value"), and a request admitted
    // on its message may then be refused on its readings, carrying its reading. The counts below are therefore
    // taken from the answers, by the policy each 429 names.
    const statuses = new Map<number, number>();
    const refusedOn = new Map<string, number>();
    for (let sent = 0; sent < FLOOD_REQUESTS; sent += 10) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const response = await post('acme', 1);
          const body = (await response.json()) as { policy?: string };
          return { status: response.status, policy: body.policy };
        }),
      );
      for (const { status, policy } of answers) {
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 429) refusedOn.set(String(policy), (refusedOn.get(String(policy)) ?? 0) + 1);
      }
    }
    const refused = statuses.get(429) ?? 0;
    console.log(`acme's flood: ${JSON.stringify(Object.fromEntries(statuses))}, refused on ${JSON.stringify(Object.fromEntries(refusedOn))}`);
    expect([...refusedOn.keys()].filter((policy) => policy !== 'tenant-messages' && policy !== 'tenant-readings')).toEqual([]);
    const refusedOnMessages = refusedOn.get('tenant-messages') ?? 0;
    // Each refusal on the readings charge carries its one reading.
    const refusedUnits = refusedOn.get('tenant-readings') ?? 0;
    expect(refusedOnMessages).toBeGreaterThan(FLOOD_REQUESTS / 2);
    expect((statuses.get(202) ?? 0) + refused).toBe(FLOOD_REQUESTS);
    // globex: 3 requests of 50 readings, more than its burst: 413, counted as rejected with their 150 units.
    for (let i = 0; i < 3; i++) expect((await post('globex', 50)).status).toBe(413);
    await running.service.governor.flush();
    await running.service.projections.waitForCaughtUp();
    const to = new Date(Math.ceil((Date.now() + 1) / 60_000) * 60_000);

    // /metrics: the refused-messages counter names acme; the units counters only the readings refused of it.
    const exported = await (await fetch(`${running.baseUrl}/metrics`)).text();
    const counters = samplesOf(exported, ['_governance_refused_messages_total', '_governance_shed_units_total', '_governance_rejected_units_total']);
    const of = (suffix: string, tenant: string) => counters.filter((sample) => sample.name.endsWith(suffix) && sample.labels.tenant === tenant);
    expect(of('_refused_messages_total', 'acme')).toEqual([
      { name: expect.any(String), labels: { dimension: 'INGEST', allowance: 'HTTP', tenant: 'acme', outcome: 'rejected' }, value: refused },
    ]);
    expect(of('_rejected_units_total', 'acme').map((sample) => sample.value)).toEqual(refusedUnits === 0 ? [] : [refusedUnits]);
    expect(of('_shed_units_total', 'acme')).toEqual([]);
    expect(of('_refused_messages_total', 'globex').map((sample) => sample.value)).toEqual([3]);
    expect(of('_rejected_units_total', 'globex').map((sample) => sample.value)).toEqual([150]);

    // shedTrend: limited is the refusals; their units are those refused on the readings charge. topShedders:
    // acme first, globex first by units.
    type Point = { limited: number; limitedUnits: number };
    type Shedder = { tenantId: string; limited: number; limitedUnits: number };
    const trends = await api.as('AUDITOR')<{ shedTrend: Point[]; byMessages: Shedder[]; byUnits: Shedder[] }>(
      `query($from: DateTime!, $to: DateTime!) {
        shedTrend(tenantId: "acme", dimension: INGEST, from: $from, to: $to, bucket: MINUTE) { limited limitedUnits }
        byMessages: topShedders(dimension: INGEST, from: $from, to: $to, first: 5) { tenantId limited limitedUnits }
        byUnits: topShedders(dimension: INGEST, from: $from, to: $to, first: 5, orderBy: UNITS) { tenantId limited limitedUnits } }`,
      { from: from.toISOString(), to: to.toISOString() },
    );
    expect(trends.shedTrend.reduce((sum, point) => sum + point.limited, 0)).toBe(refused);
    expect(trends.shedTrend.reduce((sum, point) => sum + point.limitedUnits, 0)).toBe(refusedUnits);
    expect(trends.byMessages).toEqual([
      { tenantId: 'acme', limited: refused, limitedUnits: refusedUnits },
      { tenantId: 'globex', limited: 3, limitedUnits: 150 },
    ]);
    expect(trends.byUnits.map((shedder) => shedder.tenantId)).toEqual(['globex', 'acme']);

    // The console's Trends page: the requests chart and the totals show acme's refusals.
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, running.baseUrl, await api.token('OPERATOR'));
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
    await page.goto(`${running.baseUrl}/console/#/trends?tenant=acme&dimension=INGEST&range=1h`);
    const requestsChart = page.getByRole('img', { name: /requests per minute/ });
    await expect.poll(() => requestsChart.getAttribute('aria-label'), { timeout: 30_000 }).toContain(`refused requests ${refused} in all`);
    expect(Number((await page.getByTestId('total-refused').textContent())?.replaceAll(',', ''))).toBe(refused);
    expect(await page.getByTestId('top-shedders').locator('tbody tr').first().locator('th').textContent()).toBe('acme');
    await page.close();

    // The dashboard's panel query and the alert, by promtool, on the counters exported above, as if the flood
    // went on at the same pace for 20 minutes (each counter grows by its value every second).
    const service = /^devicechain_(\w+?)_governance_/.exec(counters[0]!.name)![1]!;
    const dashboard = JSON.parse(await readFile(packagePath('dashboards', 'governance.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const panel = dashboard.panels.find((each) => each.title.startsWith('Refused requests/s by tenant'))!;
    const expr = panel.targets[0]!.expr.replaceAll('${service}', service).replaceAll('$__rate_interval', '2m');
    const refusals = counters.filter((sample) => sample.name.endsWith('_refused_messages_total'));
    const perTenant = new Map<string, number>();
    for (const sample of refusals) perTenant.set(`${sample.labels.tenant}\u0000${sample.labels.dimension}`, (perTenant.get(`${sample.labels.tenant}\u0000${sample.labels.dimension}`) ?? 0) + sample.value);
    const description = (perSecond: number) =>
      `The tenant is over its ceiling without pause (currently ${perSecond} refusals/s, shed or answered 429). Raise its tier or override, or ask it to slow down, before it becomes a support ticket.`;
    const named = [...perTenant].filter(([key]) => !key.startsWith('_other\u0000'));
    const tests = {
      rule_files: [packagePath('alerts', 'governance.rules.yml')],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: counters.map((sample) => ({
            series: `${sample.name}{${Object.entries({ job: 'governance', instance: 'e2e', ...sample.labels })
              .map(([label, value]) => `${label}="${value}"`)
              .join(', ')}}`,
            values: `0+${sample.value * 60}x20`,
          })),
          alert_rule_test: [
            {
              eval_time: '15m',
              alertname: 'SustainedRefusals',
              exp_alerts: named.map(([key, perSecond]) => {
                const [tenant, dimension] = key.split('\u0000') as [string, string];
                return {
                  exp_labels: { job: 'governance', tenant, dimension, severity: 'info' },
                  exp_annotations: { summary: `Tenant ${tenant} has had ${dimension} traffic refused for 10 minutes`, description: description(perSecond) },
                };
              }),
            },
          ],
          promql_expr_test: [
            {
              expr,
              eval_time: '15m',
              exp_samples: [...perTenant].map(([key, value]) => {
                const [tenant, dimension] = key.split('\u0000') as [string, string];
                return { labels: `{tenant="${tenant}", dimension="${dimension}"}`, value };
              }),
            },
          ],
        },
      ],
    };
    expect(named.map(([key]) => key.split('\u0000')[0])).toContain('acme');
    const file = path.join(workDir, 'flood.test.yml');
    await writeFile(file, stringify(tests));
    const result = spawnSync('promtool', ['test', 'rules', file], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('SUCCESS');
    expect(result.status).toBe(0);
    // The refused-messages counter alone finds acme: without its units series (there are some when a readings
    // charge was refused, above) the alert still fires for it, at the same rate.
    const acmeSeries = (series: { series: string }, suffix: string) => series.series.includes(suffix) && series.series.includes('tenant="acme"');
    const messagesOnly = structuredClone(tests);
    messagesOnly.tests[0]!.input_series = messagesOnly.tests[0]!.input_series.filter((series) => !acmeSeries(series, '_units_total'));
    const { promql_expr_test: _panel, ...alertOnly } = messagesOnly.tests[0]!;
    await writeFile(file, stringify({ ...messagesOnly, tests: [alertOnly] }));
    expect(execFileSync('promtool', ['test', 'rules', file], { encoding: 'utf8' })).toContain('SUCCESS');
    // And the same input without any of acme's refusal series fires nothing for acme: the alert found it there.
    const withoutAcme = structuredClone(tests);
    withoutAcme.tests[0]!.input_series = withoutAcme.tests[0]!.input_series.filter((series) => !acmeSeries(series, '_refused_messages_total') && !acmeSeries(series, '_units_total'));
    withoutAcme.tests[0]!.alert_rule_test[0]!.exp_alerts = withoutAcme.tests[0]!.alert_rule_test[0]!.exp_alerts.filter((alert) => alert.exp_labels.tenant !== 'acme');
    withoutAcme.tests[0]!.promql_expr_test[0]!.exp_samples = withoutAcme.tests[0]!.promql_expr_test[0]!.exp_samples.filter((sample) => !sample.labels.includes('"acme"'));
    await writeFile(file, stringify(withoutAcme));
    expect(execFileSync('promtool', ['test', 'rules', file], { encoding: 'utf8' })).toContain('SUCCESS');
  }, 240_000);
});
