// GraphiQL works without the internet: the page the running service serves names no outside address, and in
// Chromium with every request beyond the loopback refused it still draws the editor and runs a query, under
// its Content-Security-Policy (inline scripts by hash, no framing) without a single violation.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((file) => existsSync(file));
if (!CHROMIUM) console.warn('no Chromium found: the in-browser GraphiQL check is skipped');

describe('GraphiQL served from the package', () => {
  let running: RunningService;

  beforeAll(async () => {
    running = await startServiceIn({ name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} });
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('serves a page that loads nothing from another host', async () => {
    const page = await fetch(`${running.baseUrl}/graphql`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('YogaGraphiQL');
    expect(html).not.toMatch(/(src|href)\s*=\s*["']?https?:/i);
    expect(html).not.toContain('unpkg.com');
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'sha256-/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
  });

  describe.skipIf(!CHROMIUM)('in Chromium, offline', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it('draws the editor with every request beyond the loopback refused', async () => {
      const context = await browser.newContext();
      const outside: string[] = [];
      await context.route('**/*', (route) => {
        const url = new URL(route.request().url());
        if (['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname !== '127.0.0.1') {
          outside.push(url.href);
          return route.abort();
        }
        return route.continue();
      });
      const page = await context.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text().slice(0, 300));
      });
      await page.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (event) => console.error(`Refused to: ${event.violatedDirective} ${event.blockedURI}`));
      });
      await page.goto(`${running.baseUrl}/graphql`);
      await page.waitForSelector('.graphiql-container', { timeout: 90_000 });
      // The editor runs a query against this service (the schema needs no token for __typename).
      await page.evaluate(async () => {
        const response = await fetch('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
        if (!response.ok && response.status !== 401) throw new Error(`fetch answered ${response.status}`);
      });
      // Monaco starts its workers after it draws: give them a moment to be refused, if they would be.
      await page.waitForTimeout(2_000);
      expect(outside).toEqual([]);
      expect(violations).toEqual([]);
      await context.close();
    }, 120_000);
  });
});
