// The console in a real browser (playwright-core driving Debian's Chromium) against the whole running service:
// an operator signs in, defines a tier, registers a tenant, sets an override and finds it in the cascade and
// the audit timeline, sees ingest traffic over the limit in the trend; a tenant viewer sees only its own
// tenant and no edit control; a refused token brings the sign-in back. axe-core checks every page, and a
// screenshot of every page is written to test-artifacts/console/.
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { axeViolations, CHROMIUM, CONSOLE_ARTIFACTS, launchChromium, prepareConsole, signIn as signInAt } from '../support/consoleBrowser.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console browser suite is skipped');


describe.skipIf(!CHROMIUM)('the console in Chromium', () => {
  let running: RunningService;
  let browser: Browser;
  let operator: string;
  let viewer: string;
  let deviceKey: string;

  // axe is injected as a script, which the console's Content-Security-Policy rightly refuses: the test's
  // pages bypass the policy for that, and only for that.
  const openPage = (width: number, height: number) => browser.newPage({ viewport: { width, height }, bypassCSP: true });

  const signIn = (page: Page, token: string) => signInAt(page, running.baseUrl, token);

  async function shoot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, `${name}.png`), fullPage: true });
    expect(await axeViolations(page), `axe on ${name}`).toEqual([]);
  }

  beforeAll(async () => {
    await prepareConsole();
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    viewer = await mintToken({ secret, role: 'TENANT_VIEWER', tenant: 'acme', sub: 'acme-bob', ttl: '1h' });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  it('shows the sign-in again for a refused token, and says how to mint one', async () => {
    const page = await openPage(1280, 800);
    await signIn(page, 'not-a-token');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('refused');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Sign in');
    expect(await page.textContent('main')).toContain('governance token --role OPERATOR');
    await shoot(page, '01-sign-in');
    await page.close();
  }, 120_000);

  it('lets an operator define a tier, register a tenant and set an override, then shows it in the cascade and the audit', async () => {
    const page = await openPage(1280, 800);
    await signIn(page, operator);
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();

    await page.getByRole('link', { name: 'Platform' }).click();
    await page.getByLabel('Tier id').fill('gold');
    await page.getByLabel('Name', { exact: true }).fill('Gold');
    await page.getByRole('button', { name: 'Define tier' }).click();
    await page.getByRole('heading', { name: /Gold/ }).waitFor();
    await shoot(page, '02-platform');

    await page.getByRole('link', { name: 'Tenants' }).click();
    await page.getByLabel('Tenant id').fill('acme');
    await page.getByLabel('Tier', { exact: true }).selectOption('gold');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('link', { name: 'acme' }).waitFor();
    await shoot(page, '03-tenants');

    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    await page.getByLabel('Dimension').selectOption('INGEST');
    await page.getByLabel('Rate per second').fill('5');
    await page.getByLabel('Burst (optional)').fill('10');
    await page.getByLabel('Reason (required)').fill('pilot rollout');
    await page.getByRole('button', { name: 'Save override' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe('Saved.');
    const ingestRow = page.locator('tr[data-dimension="INGEST"]');
    await expect.poll(() => ingestRow.locator('td.why').textContent()).toBe('tenant override');
    expect(await ingestRow.locator('td.winner').textContent()).toContain('5/s, burst 10');
    expect(await page.locator('tr[data-dimension="EGRESS"] td.why').textContent()).toBe('no override → tier value not set → platform default not set → shipped default');
    await shoot(page, '04-tenant');

    await page.getByRole('link', { name: 'Audit' }).first().click();
    const timeline = page.getByRole('list', { name: 'Limit changes, newest first' });
    await expect.poll(() => timeline.textContent()).toContain('pilot rollout');
    expect(await timeline.locator('li').first().textContent()).toMatch(/ops-alice[\s\S]*pilot rollout/);
    expect(await timeline.locator('li').first().textContent()).toContain('→ 5/s, burst 10');
    await page.getByLabel('Tenant', { exact: true }).last().fill('acme');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => page.getByTestId('time-travel').textContent()).toContain('5/s, burst 10');
    await shoot(page, '05-audit');
    await page.close();
  }, 180_000);

  it('charts ingest traffic over the limit as rejected', async () => {
    const created = await registerIngestCredential(running.service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (created.status !== 'registered') throw new Error(`no key: ${JSON.stringify(created)}`);
    deviceKey = created.key;
    const body = JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8 } }] });
    const statuses = new Set<number>();
    // 8 readings a request against 5/s with a burst of 10: after the first, most requests are refused.
    await waitFor(
      async () => {
        const answers = await Promise.all(
          Array.from({ length: 10 }, () =>
            fetch(`${running.baseUrl}/v1/ingest/acme`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-device-key': deviceKey }, body }).then((response) => response.status),
          ),
        );
        for (const status of answers) statuses.add(status);
        return statuses.has(429) && statuses.has(202);
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'both 202 and 429 from the ingest door' },
    );

    const page = await openPage(1280, 800);
    await signIn(page, operator);
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
    await page.goto(`${running.baseUrl}/console/#/trends?tenant=acme&dimension=INGEST&range=1h`);
    await waitFor(
      async () => {
        const rejected = Number((await page.getByTestId('total-rejected').textContent())?.replaceAll(',', '') ?? '0');
        if (rejected > 0) return true;
        await page.reload();
        return false;
      },
      { timeoutMs: 60_000, intervalMs: 2_000, description: 'rejected readings in the trend' },
    );
    expect(Number((await page.getByTestId('total-admitted').textContent())?.replaceAll(',', ''))).toBeGreaterThan(0);
    expect(await page.locator('figure.chart canvas').count()).toBeGreaterThan(0);
    await shoot(page, '06-trends');
    await page.close();
  }, 180_000);

  it('updates an open Trends page on admitted-only traffic, without a reload', async () => {
    const page = await openPage(1280, 800);
    await signIn(page, operator);
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
    await page.goto(`${running.baseUrl}/console/#/trends?tenant=acme&dimension=INGEST&range=1h`);
    const admittedShown = async () => Number((await page.getByTestId('total-admitted').textContent())?.replaceAll(',', '') ?? '0');
    await page.getByTestId('total-admitted').waitFor();
    // The trend as it stands: what earlier tests sent has reached the page (it reads no more without new traffic).
    let before = -1;
    await waitFor(async () => before === (before = await admittedShown()), { timeoutMs: 30_000, intervalMs: 6_000, description: 'the trend to settle' });
    // One reading a request, a second apart: well within acme's 5/s (burst 10), so nothing is refused and the
    // sheds subscription hears nothing of it.
    const body = JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { a: 1 } }] });
    let admitted = 0;
    for (let i = 0; i < 4; i++) {
      const response = await fetch(`${running.baseUrl}/v1/ingest/acme`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-device-key': deviceKey }, body });
      if (response.status === 202) admitted++;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(admitted).toBeGreaterThan(0);
    // No reload: the page reads its trend again by itself (every 5 s while visible) once the projection has it.
    await waitFor(async () => (await admittedShown()) >= before + admitted, {
      timeoutMs: 45_000,
      intervalMs: 500,
      description: `the open page to show ${admitted} more admitted readings than ${before}`,
    });
    await page.close();
  }, 120_000);

  it('shows a tenant viewer its own tenant only, with no edit control, also at a phone width', async () => {
    const page = await openPage(390, 844);
    await signIn(page, viewer);
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    expect(await page.getByRole('link', { name: 'Tenants' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Platform' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save override' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save policy' }).count()).toBe(0);
    expect(await page.locator('tr[data-dimension="INGEST"] td.why').textContent()).toBe('tenant override');
    await shoot(page, '07-tenant-viewer-phone');

    await page.goto(`${running.baseUrl}/console/#/tenant/initech`);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not allowed|FORBIDDEN|No tenant/i);
    await page.close();
  }, 120_000);

  it('is usable from the keyboard: the skip link and the search form', async () => {
    const page = await openPage(1280, 800);
    await signIn(page, operator);
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    await page.getByLabel('Search tenants').focus();
    await page.keyboard.type('acm');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.url()).toContain('search=acm');
    await page.getByRole('link', { name: 'acme' }).waitFor();
    await page.close();
  }, 120_000);

  it('brings the sign-in back when the token stops being accepted, and prefills GraphiQL with the token', async () => {
    const page = await openPage(1280, 800);
    await signIn(page, operator);
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();

    await page.getByRole('link', { name: 'GraphiQL' }).click();
    await page.waitForSelector('.graphiql-container', { timeout: 90_000 });
    await page.getByRole('button', { name: /headers/i }).first().click();
    await expect.poll(() => page.locator('.graphiql-editor-tool').textContent(), { timeout: 30_000 }).toContain('Bearer');
    await page.goBack();

    await page.evaluate(() => sessionStorage.setItem('governance-console.token', 'expired.or.revoked'));
    await page.reload();
    await page.getByLabel('API token').waitFor();
    await page.close();
  }, 180_000);
});
