// What a new operator tripped on in the console (issue 27), in Chromium against the whole running service: the
// Platform page says per allowance what traffic over the limit gets (HTTP ingest answers 429 though INGEST's
// default is SHED); a registration's audit line says what it did (it read "– → –"); ingest keys are issued and
// revoked from the tenant page; an empty Top shedders table says so; the tenants table fits a 390 px phone;
// /favicon.ico is an icon. Kept apart from console.test.ts, whose flows it does not repeat.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { CONSOLE_DIR } from '../../src/console/consoleRoute.ts';
import { packagePath } from '../../src/packageRoot.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((file) => existsSync(file));
if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console first-steps suite is skipped');

/** Builds the console when dist/console is missing or older than its sources (as console.test.ts does). */
async function ensureConsoleBuilt(): Promise<void> {
  const built = path.join(CONSOLE_DIR, 'index.html');
  const newest = (dir: string): number =>
    Math.max(...readdirSync(dir, { withFileTypes: true }).map((entry) => (entry.isDirectory() ? newest(path.join(dir, entry.name)) : statSync(path.join(dir, entry.name)).mtimeMs)));
  if (existsSync(built) && statSync(built).mtimeMs >= newest(packagePath('console'))) return;
  await build({ configFile: packagePath('console', 'vite.config.ts'), logLevel: 'error' });
}

describe.skipIf(!CHROMIUM)('the console where a new operator tripped', () => {
  let running: RunningService;
  let browser: Browser;
  let operator: string;

  const openPage = (width: number, height: number) => browser.newPage({ viewport: { width, height } });

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${running.baseUrl}/console/`);
    await page.getByLabel('API token').fill(operator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
  }

  beforeAll(async () => {
    await ensureConsoleBuilt();
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    operator = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    expect(await running.service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme' })).toMatchObject({ status: 'applied' });
    // Long enough to fill a phone's width many times over in one row.
    expect(await running.service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 123456, burst: 234567, reason: 'wide' })).toMatchObject({
      status: 'applied',
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  it('says per allowance what traffic over the limit gets, HTTP ingest answering 429', async () => {
    const page = await openPage(1280, 800);
    await signIn(page);
    await page.getByRole('link', { name: 'Platform' }).click();
    const ingest = page.locator('tr', { has: page.locator('th', { hasText: /^INGEST$/ }) });
    await expect.poll(() => ingest.textContent()).toContain('HTTP: REJECT');
    const text = (await ingest.textContent()) ?? '';
    expect(text).toContain('HTTP 429');
    expect(text).toMatch(/LIVE: SHED \(MQTT: acknowledged to the broker and dropped/);
    expect(text).toMatch(/INTEGRATIONS: DROP_ACCEPTED/);
    await page.close();
  }, 120_000);

  it("says what a registration did in the audit, not '– → –'", async () => {
    const page = await openPage(1280, 800);
    await signIn(page);
    await page.goto(`${running.baseUrl}/console/#/audit?tenant=acme`);
    const timeline = page.getByRole('list', { name: 'Limit changes, newest first' });
    const registration = timeline.locator('li', { hasText: 'TENANT_REGISTERED' });
    await expect.poll(() => registration.textContent()).toContain('registered with no tier (platform defaults apply)');
    expect(await registration.textContent()).not.toContain('– → –');
    await page.close();
  }, 120_000);

  it('issues an ingest key, shows it once, and revokes it from the tenant page', async () => {
    const page = await openPage(1280, 800);
    await signIn(page);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'Tenant acme' }).waitFor();
    await page.getByLabel('Device id (a key for this device only)').fill('pump-1');
    await page.getByRole('button', { name: 'Issue key' }).click();
    await expect.poll(() => page.getByTestId('issued-key').textContent()).toMatch(/\S{20,}/);
    const row = page.locator('tr', { hasText: 'pump-1' });
    await row.waitFor();
    const keyId = (await row.locator('code').textContent())!;
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: `Revoke key ${keyId}` }).click();
    await expect.poll(() => page.getByRole('status').last().textContent()).toBe(`Key ${keyId} revoked.`);
    await expect.poll(() => page.getByRole('button', { name: `Revoke key ${keyId}` }).count()).toBe(0);
    await page.close();
  }, 120_000);

  it('says so when no tenant was refused in the Top shedders range', async () => {
    const page = await openPage(1280, 800);
    await signIn(page);
    await page.getByRole('link', { name: 'Trends' }).click();
    await expect.poll(() => page.getByTestId('no-shedders').textContent(), { timeout: 30_000 }).toContain('no tenant was refused anything');
    await page.close();
  }, 120_000);

  it('fits the tenants table in a 390 px wide phone', async () => {
    const page = await openPage(390, 844);
    await signIn(page);
    await page.getByRole('link', { name: 'acme' }).waitFor();
    const widths = await page.evaluate(() => {
      const table = document.querySelector('table.stack')!.getBoundingClientRect();
      return { page: document.documentElement.scrollWidth, tableRight: table.right };
    });
    expect(widths.page).toBeLessThanOrEqual(390);
    expect(widths.tableRight).toBeLessThanOrEqual(390);
    // Every dimension is still there, labelled.
    expect(await page.locator('table.stack td[data-label="INGEST"]').first().textContent()).toContain('123,456/s, burst 234,567');
    await page.close();
  }, 120_000);

  it('answers /favicon.ico with the icon the console names', async () => {
    const icon = await fetch(`${running.baseUrl}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    const page = await openPage(1280, 800);
    await page.goto(`${running.baseUrl}/console/`);
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/favicon.ico');
    await page.close();
  }, 60_000);
});
