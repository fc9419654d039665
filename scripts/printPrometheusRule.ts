// `npm run deploy:rules`: writes deploy/kubernetes/prometheusrule.yaml from alerts/governance.rules.yml, so the
// Prometheus Operator loads exactly the rules promtool tests. test/unit/deploy/manifests.test.ts fails when the
// two differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { packagePath } from '../src/packageRoot.ts';

export const PROMETHEUS_RULE_FILE = packagePath('deploy', 'kubernetes', 'prometheusrule.yaml');

const HEADER = `# Generated from alerts/governance.rules.yml by \`npm run deploy:rules\`; edit the rules there, not here.
`;

export function printedPrometheusRule(): string {
  const rules = parse(readFileSync(packagePath('alerts', 'governance.rules.yml'), 'utf8')) as { groups: unknown[] };
  const resource = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'governance', labels: { 'app.kubernetes.io/name': 'governance-ledger' } },
    spec: { groups: rules.groups },
  };
  return HEADER + stringify(resource, { lineWidth: 0 });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(PROMETHEUS_RULE_FILE, printedPrometheusRule());
  console.log(`wrote ${PROMETHEUS_RULE_FILE}`);
}
