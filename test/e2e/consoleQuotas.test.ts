// The console's tenant page in Chromium (playwright-core driving Debian's Chromium) against the running
// service: an operator sets a daily INGEST quota on a tenant's override, readings use it past 50 % and 80 %,
// and the tenant page shows the quota as a bar whose value and maximum are the quota's used and limit, and
// lists the notices recorded for both thresholds. axe-core checks the page; a screenshot goes to
// test-artifacts/console/.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { packagePath } from '../../src/packageRoot.ts';
import { axeViolations, CHROMIUM, ensureConsoleBuilt, launchChromium, signIn } from '../support/consoleBrowser.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console quota suite is skipped');

const ARTIFACTS = packagePath('test-artifacts', 'console');
const LIMIT = 20;
const READINGS = 17; // 85 %: past the 50 % and 80 % thresholds, short of 100 %

interface QuotaState {
  quotas: Array<{ dimension: string; used: number; quota: { period: string; limit: number } }>;
  quotaNotices: Array<{ dimension: string; thresholdPercent: number; used: number; limit: number }>;
}

describe.skipIf(!CHROMIUM)('period quotas in the console (Chromium)', () => {
  let running: RunningService;
  let browser: Browser;
  let operator: string;

  async function gql<T>(query: string): Promise<{ data?: T; errors?: unknown[] }> {
    const response = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: JSON.stringify({ query }),
    });
    return (await response.json()) as { data?: T; errors?: unknown[] };
  }

  async function applied(mutation: string): Promise<void> {
    const body = await gql<Record<string, { __typename: string }>>(mutation);
    expect(Object.values(body.data ?? {}).map((each) => each.__typename), JSON.stringify(body)).toEqual(['Applied']);
  }

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    await ensureConsoleBuilt();
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    await applied('mutation { registerTenant(input: { tenantId: "acme" }) { __typename } }');
    // A rate well above what the test sends, so only the quota can refuse.
    await applied(
      `mutation { setTenantOverride(input: { tenantId: "acme", dimension: INGEST, reason: "plan: ${LIMIT} readings a day", ratePerSecond: 1000, burst: 1000, quota: { period: DAY, limit: ${LIMIT} } }) { __typename } }`,
    );
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  it('shows the daily quota as a bar of used against limit and lists the 50 % and 80 % notices', async () => {
    const created = await registerIngestCredential(running.service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (created.status !== 'registered') throw new Error(`no key: ${JSON.stringify(created)}`);
    const body = JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { a: 1 } }] });
    for (let sent = 0; sent < READINGS; sent += 1) {
      const response = await fetch(`${running.baseUrl}/v1/ingest/acme`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-device-key': created.key }, body });
      expect(response.status, await response.text()).toBe(202);
    }
    let state: QuotaState | undefined;
    await waitFor(
      async () => {
        const answer = await gql<QuotaState>('{ quotas(tenantId: "acme") { dimension used quota { period limit } } quotaNotices(tenantId: "acme") { dimension thresholdPercent used limit } }');
        state = answer.data;
        return state?.quotas[0]?.used === READINGS && state.quotaNotices.length >= 2;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `the quota used ${READINGS} of ${LIMIT} and two notices recorded` },
    );
    expect(state!.quotas).toEqual([{ dimension: 'INGEST', used: READINGS, quota: { period: 'DAY', limit: LIMIT } }]);
    expect(state!.quotaNotices.map((notice) => notice.thresholdPercent).sort((a, b) => a - b)).toEqual([50, 80]);

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    await signIn(page, running.baseUrl, operator);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    await page.getByRole('heading', { name: 'Period quotas' }).waitFor();
    const quota = page.locator('li[data-quota="INGEST"]');
    const bar = quota.locator('meter');
    await bar.waitFor();
    expect(await bar.getAttribute('aria-label')).toBe('INGEST quota used this period');
    expect(await bar.evaluate((meter: HTMLMeterElement) => ({ min: meter.min, max: meter.max, value: meter.value }))).toEqual({ min: 0, max: LIMIT, value: READINGS });
    expect(await quota.textContent()).toContain(`${READINGS} of ${LIMIT} this day`);

    const notices = page.getByTestId('quota-notices').locator('li');
    await expect.poll(() => notices.allTextContents()).toHaveLength(2);
    const texts = await notices.allTextContents();
    expect(texts.some((text) => text.startsWith('INGEST reached 50 % (10 of 20)'))).toBe(true);
    expect(texts.some((text) => text.startsWith('INGEST reached 80 % (16 of 20)'))).toBe(true);
    expect(texts.join('\n')).not.toContain('None yet.');

    await page.screenshot({ path: path.join(ARTIFACTS, 'quota-tenant.png'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
    await page.close();
  }, 180_000);
});
