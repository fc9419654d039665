// The alert rules, their unit tests, the Prometheus config and the /metrics output, checked by promtool
// itself. CI installs promtool (Debian package `prometheus`); without it this suite says so and skips.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createMetricsRecorder } from '../../../src/metrics/metricsRecorder.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
if (!hasPromtool) console.warn('promtool is not installed (Debian package `prometheus`): alert rule and metrics checks are skipped.');

function promtool(args: string[], input?: string): string {
  return execFileSync('promtool', args, { cwd: ROOT, input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

describe.skipIf(!hasPromtool)('promtool', () => {
  it('accepts the alert rules', () => {
    expect(promtool(['check', 'rules', 'alerts/governance.rules.yml'])).toContain('SUCCESS: 10 rules found');
  });

  it('passes the alert unit tests: each alert fires and stays silent where it should', () => {
    expect(promtool(['test', 'rules', 'alerts/governance.test.yml'])).toContain('SUCCESS');
  });

  it('evaluates the dashboard’s refusal panels in the promtool tests: their expressions, as Grafana would send them, are there', () => {
    // The panels' queries with service "governance" and a 2m rate interval, as the test series name them.
    const dashboard = JSON.parse(readFileSync(`${ROOT}dashboards/governance.json`, 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const panelExpressions = dashboard.panels
      .filter((panel) => /^(Refused requests|Limited units)\/s by tenant/.test(panel.title))
      .flatMap((panel) => panel.targets.map((target) => target.expr.replaceAll('${service}', 'governance').replaceAll('$__rate_interval', '2m')));
    expect(panelExpressions).toHaveLength(2);
    const tests = parse(readFileSync(`${ROOT}alerts/governance.test.yml`, 'utf8')) as { tests: Array<{ promql_expr_test?: Array<{ expr: string }> }> };
    const tested = tests.tests.flatMap((test) => (test.promql_expr_test ?? []).map((each) => each.expr));
    expect(tested).toEqual(expect.arrayContaining(panelExpressions));
  });

  it('accepts the Prometheus config docker-compose mounts', () => {
    expect(promtool(['check', 'config', '--syntax-only', 'prometheus/prometheus.yml'])).toContain('SUCCESS');
  });

  it('finds nothing to lint in /metrics, with every metric of ours holding a series', async () => {
    const metrics = createMetrics({ service: 'event-sources' });
    metrics.useSources({
      commandBacklogs: async () => [{ tenantId: 'acme', undelivered: 3, ceiling: 1000 }],
      projectionLags: async () => [{ projection: 'admission-trends', secondsBehind: 0.5 }],
      projectionQuarantine: async () => [{ projection: 'admission-trends', events: 2 }],
      redisCounterFallback: () => false,
      nameOverflowInUse: () => true,
    });
    await createMetricsRecorder(metrics).record(
      [
        {
          tenantId: 'acme',
          dimension: 'INGEST',
          allowance: 'HTTP',
          fromSecond: 1,
          seconds: 1,
          admittedUnits: 5,
          admittedMessages: 1,
          shedUnits: 2,
          shedMessages: 1,
          rejectedUnits: 1,
          rejectedMessages: 3,
          hitSeconds: 1,
        },
      ],
      [{ tenantId: 'acme', dimension: 'INGEST', cause: 'unreachable', fromSecond: 1, seconds: 1, units: 3, messages: 1 }],
    );
    metrics.ledgerAppendSeconds.observe({ outcome: 'ok' }, 0.004);
    metrics.inferenceInputTokens.inc(10);
    metrics.inferenceOutputTokens.inc(20);
    metrics.addCommandRejection('acme', 'CEILING_REACHED');
    const text = await metrics.render();
    expect(text).toContain('devicechain_event_sources_governance_unresolved_admissions_total{dimension="INGEST",cause="unreachable"} 3');
    const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
