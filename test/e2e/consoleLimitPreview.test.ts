// The limit preview in the console, in Chromium, against the whole service on PostgreSQL (a schema of its
// own): a tenant's recorded demand (20 a second for 60 s through the admission API), then an operator types a
// lower override on the Tenant page and a lower tier limit on the Platform page and asks what each would have
// refused: the chart (inline SVG: demand, the limit in force now and the proposed one, refused units) and its
// figures show before anything is applied, with the API's own figures, and nothing changes until saved. On
// the Platform page a platform default and a tier limit set in shadow show beside the enforced ones (and the
// tier's on its tenant's page), and the audit timeline marks them as shadows. axe-core checks the pages; screenshots go to test-artifacts/console/.
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { axeViolations, CHROMIUM, CONSOLE_ARTIFACTS, launchChromium, prepareConsole, signIn } from '../support/consoleBrowser.ts';
import { postgresOnly, type TestDb } from '../support/databases.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console limit-preview suite is skipped');
if (!postgresOnly) console.warn('DATABASE_URL is not set: the console limit-preview suite (PostgreSQL) is skipped');

const ALICE = { id: 'ops-alice', role: 'OPERATOR' as const };

describe.skipIf(!CHROMIUM || !postgresOnly)('the limit preview chart in the console, in Chromium (PostgreSQL)', () => {
  let storage: TestDb;
  let running: RunningService;
  let browser: Browser;
  let operator: string;
  let previewed: { refusedUnits: number; currentRefusedUnits: number; demandUnits: number };

  async function gql<Data>(query: string, variables: Record<string, unknown> = {}): Promise<Data> {
    const response = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: Data; errors?: unknown };
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data!;
  }

  const PREVIEW = `query ($override: SetTenantOverrideInput, $from: DateTime) {
    limitChangePreview(override: $override, from: $from) { total { demandUnits refusedUnits currentRefusedUnits } }
  }`;
  const lastHour = () => new Date(Date.now() - 3_600_000).toISOString();
  const OVERRIDE = { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5, burst: 10, reason: 'preview' };

  beforeAll(async () => {
    await prepareConsole();
    storage = await postgresOnly!.open({ max: 2 });
    running = await startServiceIn({ name: 'postgres', env: storage.env!, prepare: async () => {}, dispose: () => storage.dispose() });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    const service = await mintToken({ secret, role: 'SERVICE', sub: 'recorded-demand', ttl: '1h' });
    const cp = running.service.controlPlane;
    expect(await cp.defineTier(ALICE, { tierId: 'gold', name: 'Gold' })).toMatchObject({ status: 'applied' });
    expect(await cp.setTierLimit(ALICE, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 })).toMatchObject({ status: 'applied' });
    expect(await cp.registerTenant(ALICE, { tenantId: 'acme', tierId: 'gold' })).toMatchObject({ status: 'applied' });
    await running.service.projections.waitForCaughtUp({ timeoutMs: 120_000 });

    // 20 readings a second for 60 s, a request every 50 ms, two minutes back: all admitted at 100/s.
    const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
    const items = Array.from({ length: 1200 }, (_, index) => ({
      tenantId: 'acme',
      dimension: 'INGEST',
      allowance: 'LIVE',
      units: 1,
      at: new Date(fromMs + Math.floor(index / 20) * 1000 + (index % 20) * 50).toISOString(),
    }));
    for (let start = 0; start < items.length; start += 600) {
      const response = await fetch(`${running.baseUrl}/v1/admissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${service}` },
        body: JSON.stringify({ items: items.slice(start, start + 600) }),
      });
      expect(response.status).toBe(200);
      const { decisions } = (await response.json()) as { decisions: Array<{ admitted: boolean }> };
      expect(decisions.every((decision) => decision.admitted)).toBe(true);
    }
    // The Governor records each second about a second later: wait until the ledger holds all of them.
    await waitFor(
      async () => {
        previewed = (await gql<{ limitChangePreview: { total: typeof previewed } }>(PREVIEW, { override: OVERRIDE, from: lastHour() })).limitChangePreview.total;
        return previewed.demandUnits === 1200;
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'the recorded demand in the ledger' },
    );
    // By hand: 10 + 5 x 59.95 of 1,200 admitted at 5/s with a burst of 10, so about 890 refused.
    expect(Math.abs(previewed.refusedUnits - 890) / 890).toBeLessThan(0.02);
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  const openPage = () => browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });

  /** The figures the page wrote beside its chart: the units the proposed limit would have refused. */
  async function chartOf(scope: ReturnType<Page['locator']>): Promise<number> {
    const chart = scope.getByTestId('preview-chart');
    await chart.waitFor({ timeout: 60_000 });
    expect(await chart.getAttribute('aria-label')).toMatch(/in force now \(100\/s\) and the proposed limit \(5\/s\)/);
    expect(await scope.getByTestId('preview-current-limit').count()).toBe(1);
    expect(await scope.getByTestId('preview-proposed-limit').count()).toBe(1);
    expect(await scope.getByTestId('preview-refused-bar').count()).toBeGreaterThan(0);
    expect(await scope.getByTestId('preview-peak').getAttribute('d')).toMatch(/^M /);
    return Number((await scope.getByTestId('preview-refused').textContent())!.replaceAll(',', ''));
  }

  it('charts what a lower override would have refused on the Tenant page, before it is saved', async () => {
    const page = await openPage();
    await signIn(page, running.baseUrl, operator);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    await page.getByLabel('Dimension').selectOption('INGEST');
    await page.getByLabel('Rate per second').fill('5');
    await page.getByLabel('Burst (optional)').fill('10');
    await page.getByLabel('Replay').selectOption({ label: 'the last hour' });
    await page.getByRole('button', { name: 'Preview what it would refuse' }).click();
    const form = page.locator('form', { has: page.getByRole('heading', { name: 'Set or clear an override' }) });
    expect(await chartOf(form)).toBe(previewed.refusedUnits);
    expect(await form.getByTestId('preview-current-refused').textContent()).toBe('0');
    expect(await form.getByTestId('preview-summary').textContent()).toContain('Of 1,200 units offered');
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, 'limit-preview-override.png'), fullPage: true });
    expect(await axeViolations(page), 'axe on the Tenant page with the preview').toEqual([]);
    // Nothing was applied: the tier's limit is still the one in force.
    expect(await page.locator('tr[data-dimension="INGEST"] td.why').textContent()).toBe('no override → tier');
    await page.close();
  }, 180_000);

  it('charts a lower tier limit on the Platform page; shadow platform defaults and tier limits show beside the enforced ones and in the audit', async () => {
    const page = await openPage();
    await signIn(page, running.baseUrl, operator);
    await page.getByRole('link', { name: 'Platform' }).click();
    await page.getByRole('heading', { name: 'Platform', exact: true }).waitFor();
    const tierForm = page.locator('form', { has: page.getByRole('heading', { name: 'Set a tier limit' }) });
    await tierForm.getByLabel('Dimension').selectOption('INGEST');
    await tierForm.getByLabel('Rate per second').fill('5');
    await tierForm.getByLabel('Burst (optional)').fill('10');
    await tierForm.getByLabel('Replay').selectOption({ label: 'the last hour' });
    await tierForm.getByRole('button', { name: 'Preview what it would refuse' }).click();
    expect(await chartOf(tierForm)).toBe(previewed.refusedUnits);
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, 'limit-preview-tier.png'), fullPage: true });
    expect(await axeViolations(page), 'axe on the Platform page with the preview').toEqual([]);

    // Then saved as a shadow: the tier's enforced limit stays, the shadow shows beside it.
    await tierForm.getByLabel('Mode').selectOption('SHADOW');
    await tierForm.getByLabel('Reason').fill('watch 5/s for a day');
    await tierForm.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => tierForm.getByRole('status').textContent(), { timeout: 30_000 }).toBe('Saved.');
    // The page reads the tiers again at once; the read model may take a moment longer: read the page again until it has.
    const gold = page.locator('[data-tier="gold"]');
    await expect
      .poll(
        async () => {
          await page.reload();
          await gold.waitFor();
          return gold.locator('li.shadow').allTextContents();
        },
        { timeout: 60_000, interval: 500 },
      )
      .toEqual(['INGEST: 5/s, burst 10 shadow, not enforced']);
    expect(await gold.textContent()).toContain('INGEST: 100/s, burst 200');

    const platformForm = page.locator('form', { has: page.getByRole('heading', { name: 'Set a platform default' }) });
    await platformForm.getByLabel('Dimension').selectOption('API_REQUESTS');
    await platformForm.getByLabel('Rate per second').fill('50');
    await platformForm.getByLabel('Mode').selectOption('SHADOW');
    await platformForm.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => platformForm.getByRole('status').textContent(), { timeout: 30_000 }).toBe('Saved.');
    const apiRow = page.locator('tr[data-dimension="API_REQUESTS"]');
    await expect
      .poll(
        async () => {
          await page.reload();
          await apiRow.waitFor();
          return apiRow.locator('td.shadow').textContent();
        },
        { timeout: 60_000, interval: 500 },
      )
      .toContain('50/s');
    expect(await apiRow.textContent()).toContain('not set');
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, 'shadow-limits-platform.png'), fullPage: true });
    expect(await axeViolations(page), 'axe on the Platform page with shadows').toEqual([]);

    // The tenant's page shows the tier's shadow beside the limit in force.
    await page.goto(`${running.baseUrl}/console/#/tenant/acme`);
    const ingestRow = page.locator('tr[data-dimension="INGEST"]');
    await expect.poll(() => ingestRow.locator('td.shadow').textContent(), { timeout: 30_000 }).toContain('5/s, burst 10');
    expect(await ingestRow.locator('td.shadow').textContent()).toContain('shadow, tier');
    expect(await ingestRow.locator('td.winner').textContent()).toContain('100/s, burst 200');

    await page.getByRole('navigation').getByRole('link', { name: 'Audit' }).click();
    const timeline = page.getByRole('list', { name: 'Limit changes, newest first' });
    await expect
      .poll(
        async () => {
          await page.reload();
          await timeline.locator('li').first().waitFor();
          return timeline.locator('li').first().textContent();
        },
        { timeout: 60_000, interval: 500 },
      )
      .toContain('PLATFORM_SHADOW_DEFAULT_SET');
    expect(await timeline.locator('li').first().textContent()).toContain('shadow: refuses nothing');
    expect(await timeline.locator('li', { hasText: 'TIER_SHADOW_LIMIT_SET' }).textContent()).toContain('shadow: refuses nothing');
    await page.close();

    // The enforced limits did not move: the API says the same.
    const limits = await gql<{ tenant: { effectiveLimits: Array<{ dimension: string; value: { ratePerSecond: number }; shadow: { source: string; value: { ratePerSecond: number } } | null }> } }>(
      '{ tenant(id: "acme") { effectiveLimits { dimension value { ratePerSecond } shadow { source value { ratePerSecond } } } } }',
    );
    const of = (dimension: string) => limits.tenant.effectiveLimits.find((each) => each.dimension === dimension)!;
    expect(of('INGEST')).toMatchObject({ value: { ratePerSecond: 100 }, shadow: { source: 'TIER', value: { ratePerSecond: 5 } } });
    expect(of('API_REQUESTS').shadow).toMatchObject({ source: 'PLATFORM_DEFAULT', value: { ratePerSecond: 50 } });
  }, 180_000);
});
