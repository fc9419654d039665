// The console's tenant page in Chromium (playwright-core driving Debian's Chromium) against the running
// service: an operator sets a shadow override beside the enforced tier limit, sees the shadow beside the
// limit in force (not enforced), then enforces it. axe-core checks the page; a screenshot goes to
// test-artifacts/console/.
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { axeViolations, CHROMIUM, CONSOLE_ARTIFACTS, launchChromium, prepareConsole, signIn } from '../support/consoleBrowser.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console shadow-limit suite is skipped');


describe.skipIf(!CHROMIUM)('shadow limits in the console (Chromium)', () => {
  let running: RunningService;
  let browser: Browser;
  let operator: string;

  async function gql(query: string): Promise<void> {
    const response = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: JSON.stringify({ query }),
    });
    const body = (await response.json()) as { data?: Record<string, { __typename: string }> };
    expect(Object.values(body.data ?? {}).map((each) => each.__typename), JSON.stringify(body)).toEqual(['Applied']);
  }

  beforeAll(async () => {
    await prepareConsole();
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    await gql('mutation { defineTier(input: { tierId: "gold", name: "Gold" }) { __typename } }');
    await gql('mutation { setTierLimit(input: { tierId: "gold", dimension: INGEST, ratePerSecond: 100, burst: 200 }) { __typename } }');
    await gql('mutation { registerTenant(input: { tenantId: "acme", tierId: "gold" }) { __typename } }');
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  it('sets a shadow override, shows it beside the limit in force, then enforces it', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    await signIn(page, running.baseUrl, operator);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    await page.getByLabel('Dimension').selectOption('INGEST');
    await page.getByLabel('Rate per second').fill('5');
    await page.getByLabel('Burst (optional)').fill('10');
    await page.getByLabel('Mode').selectOption('SHADOW');
    await page.getByLabel('Reason (required)').fill('try 5/s for a day');
    await page.getByRole('button', { name: 'Save override' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe('Saved.');
    const ingestRow = page.locator('tr[data-dimension="INGEST"]');
    // The tier's limit stays in force; the shadow shows beside it.
    await expect.poll(() => ingestRow.locator('td.shadow').textContent()).toContain('5/s, burst 10');
    expect(await ingestRow.locator('td.shadow').textContent()).toContain('shadow');
    expect(await ingestRow.locator('td.why').textContent()).toBe('no override → tier');
    expect(await ingestRow.locator('td.winner').textContent()).toContain('100/s, burst 200');
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, 'shadow-limit-tenant.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Enforce the shadow override' }).click();
    await expect.poll(() => ingestRow.locator('td.why').textContent()).toBe('tenant override');
    expect(await ingestRow.locator('td.winner').textContent()).toContain('5/s, burst 10');
    expect(await ingestRow.locator('td.shadow').textContent()).toBe('–');
    await page.close();
  }, 180_000);
});
