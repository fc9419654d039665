// The console's Changes page in Chromium, against the whole service on PostgreSQL (a schema of its own): two
// operators. Alice proposes a tier change that needs a second operator and schedules an override; on the page
// her own proposal shows with Approve disabled and the reason why; Bob approves it with a reason, the queue
// empties and the audit timeline names both with their reasons; Bob withdraws the scheduled override. axe-core
// checks the page; screenshots go to test-artifacts/console/.
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateJwtSecret } from '../../src/auth/jwtSecret.ts';
import { mintToken } from '../../src/auth/token.ts';
import { axeViolations, CHROMIUM, CONSOLE_ARTIFACTS, launchChromium, prepareConsole, signIn as signInAt } from '../support/consoleBrowser.ts';
import { postgresOnly, type TestDb } from '../support/databases.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

if (!CHROMIUM) console.warn('no Chromium found (Debian package `chromium`): the console Changes suite is skipped');
if (!postgresOnly) console.warn('DATABASE_URL is not set: the console Changes suite (PostgreSQL) is skipped');

const ALICE = { id: 'ops-alice', role: 'OPERATOR' as const };
/** How long a wait for the page may take on a loaded host (vitest's expect.poll gives up after 1 s by default). */
const WAIT = { timeout: 60_000, interval: 500 };

describe.skipIf(!CHROMIUM || !postgresOnly)('the console Changes page in Chromium (PostgreSQL)', () => {
  let storage: TestDb;
  let running: RunningService;
  let browser: Browser;
  let alice: string;
  let bob: string;

  const openPage = () => browser.newPage({ viewport: { width: 1280, height: 900 }, bypassCSP: true });

  beforeAll(async () => {
    await prepareConsole();
    storage = await postgresOnly!.open({ max: 2 });
    running = await startServiceIn({ name: 'postgres', env: storage.env!, prepare: async () => {}, dispose: () => storage.dispose() });
    const { secret } = await loadOrCreateJwtSecret(running.service.settings);
    alice = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
    bob = await mintToken({ secret, role: 'OPERATOR', sub: 'ops-bob', ttl: '1h' });
    const cp = running.service.controlPlane;
    expect(await cp.defineTier(ALICE, { tierId: 'gold', name: 'Gold' })).toMatchObject({ status: 'applied' });
    expect(await cp.setTierLimit(ALICE, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100 })).toMatchObject({ status: 'applied' });
    expect(await cp.registerTenant(ALICE, { tenantId: 'acme', tierId: 'gold' })).toMatchObject({ status: 'applied' });
    expect(await cp.setLimitApprovals(ALICE, { tierChanges: true, platformChanges: true, overrideAboveTimes: null })).toMatchObject({ status: 'applied' });
    expect(await cp.setTierLimit(ALICE, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 60, reason: 'gold is oversold' })).toMatchObject({
      status: 'pending-approval',
    });
    expect(
      await cp.setTenantOverride(ALICE, {
        tenantId: 'acme',
        dimension: 'EGRESS',
        ratePerSecond: 20,
        reason: 'night rate',
        effectiveFrom: new Date(Date.now() + 3_600_000),
      }),
    ).toMatchObject({ status: 'scheduled' });
    await running.service.projections.waitForCaughtUp({ timeoutMs: 120_000 });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await running?.stop();
  });

  it("shows the proposer's own change as not approvable, lets a second operator approve it, and the audit names both", async () => {
    const page = await openPage();
    await signInAt(page, running.baseUrl, alice);
    await page.getByRole('link', { name: 'Changes' }).click();
    const queue = page.getByTestId('approval-queue');
    await expect.poll(() => queue.textContent(), WAIT).toContain('gold is oversold');
    expect(await queue.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    expect(await queue.textContent()).toContain('You proposed this change: another operator approves it.');
    expect(await queue.textContent()).toContain('100/s → 60/s');
    await expect.poll(() => page.getByTestId('scheduled-changes').textContent(), WAIT).toContain('night rate');
    await page.screenshot({ path: path.join(CONSOLE_ARTIFACTS, '20-changes-proposer.png'), fullPage: true });
    expect(await axeViolations(page), 'axe on the Changes page').toEqual([]);
    await page.close();

    const other = await openPage();
    await signInAt(other, running.baseUrl, bob);
    await other.getByRole('link', { name: 'Changes' }).click();
    const bobsQueue = other.getByTestId('approval-queue');
    await expect.poll(() => bobsQueue.textContent(), WAIT).toContain('gold is oversold');
    expect(await bobsQueue.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(false);
    await bobsQueue.getByLabel('Reason').fill('agreed with sales');
    await bobsQueue.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => other.getByRole('status').first().textContent(), WAIT).toBe('Saved.');
    // The page reads the queue again at once, perhaps before the requests' read model holds the approval:
    // read the page again until the queue reads empty (clicking the link of the page shown reads nothing).
    await expect
      .poll(
        async () => {
          await other.reload();
          await other.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
          return other.getByText('No change waits for approval.').count();
        },
        WAIT,
      )
      .toBe(1);
    expect(await other.getByTestId('approval-queue').textContent()).not.toContain('gold is oversold');

    // The override's scheduled change; the tier change approved above may still be listed as scheduled until
    // its instant comes (on a loaded host it is not yet in force when the page is read).
    const scheduled = other.getByTestId('scheduled-changes').getByRole('listitem').filter({ hasText: 'setTenantOverride on tenant' });
    await scheduled.getByLabel('Reason').fill('not tonight');
    await scheduled.getByRole('button', { name: 'Withdraw' }).click();
    await expect.poll(() => other.getByRole('status').first().textContent(), WAIT).toBe('Saved.');
    await expect
      .poll(async () => {
        await other.reload();
        // Read once the scheduled changes are in: a listed change, or the words for none.
        await other.getByTestId('scheduled-changes').getByRole('listitem').or(other.getByText('No change is scheduled.')).first().waitFor();
        return other.getByTestId('scheduled-changes').textContent();
      }, WAIT)
      .not.toContain('night rate');
    await other.screenshot({ path: path.join(CONSOLE_ARTIFACTS, '21-changes-decided.png'), fullPage: true });

    await other.getByRole('link', { name: 'Audit' }).click();
    const timeline = other.getByRole('list', { name: 'Limit changes, newest first' });
    await expect.poll(() => timeline.textContent(), WAIT).toContain('approved by ops-bob');
    expect(await timeline.locator('li').first().textContent()).toMatch(/proposed by ops-alice[\s\S]*gold is oversold[\s\S]*approved by ops-bob[\s\S]*agreed with sales/);
    await other.screenshot({ path: path.join(CONSOLE_ARTIFACTS, '22-audit-approval.png'), fullPage: true });
    expect(await axeViolations(other), 'axe on the Audit page').toEqual([]);
    await other.close();
  }, 180_000);
});
