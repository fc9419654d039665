// GraphiQL works without the internet: the page the running service serves names no outside address, and in
// Chromium with every request beyond the loopback refused it still draws the editor.
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
      await page.goto(`${running.baseUrl}/graphql`);
      await page.waitForSelector('.graphiql-container', { timeout: 90_000 });
      expect(outside).toEqual([]);
      await context.close();
    }, 120_000);
  });
});
