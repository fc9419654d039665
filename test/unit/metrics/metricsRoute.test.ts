import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Server } from 'node:http';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { metricsRoute } from '../../../src/metrics/metricsRoute.ts';
import { readMetricsSettings } from '../../../src/metrics/metricsSettings.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serve(token?: string): Promise<string> {
  const metrics = createMetrics({ service: 'governance', processMetrics: false });
  server = createServer({ logger: pino({ level: 'silent' }), readiness: [] }, [metricsRoute(metrics, { token })]);
  return `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}/metrics`;
}

describe('GET /metrics', () => {
  it('is open when no token is set', async () => {
    const response = await fetch(await serve());
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('devicechain_governance_');
  });

  it('with GOVERNANCE_METRICS_TOKEN set, answers only a scraper that sends it', async () => {
    const token = readMetricsSettings({ GOVERNANCE_METRICS_TOKEN: ' s3cret-scrape ' }).token;
    expect(token).toBe('s3cret-scrape');
    const url = await serve(token);
    const missing = await fetch(url);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await missing.text()).not.toContain('devicechain_');
    for (const wrong of ['Bearer nope', 'Bearer s3cret-scrap', 'Basic s3cret-scrape', 's3cret-scrape']) {
      expect((await fetch(url, { headers: { authorization: wrong } })).status).toBe(401);
    }
    const right = await fetch(url, { headers: { authorization: 'Bearer s3cret-scrape' } });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain('devicechain_governance_');
  });

  it('treats an empty GOVERNANCE_METRICS_TOKEN as unset', () => {
    expect(readMetricsSettings({ GOVERNANCE_METRICS_TOKEN: '  ' }).token).toBeUndefined();
  });
});
