// The Kubernetes manifests in deploy/kubernetes, checked offline: every document is parsed and validated against
// the Kubernetes (and Prometheus Operator) OpenAPI schemas that kubernetes-models ships, the probes point at the
// service's health routes, and the PrometheusRule holds exactly the rules promtool tests in alerts/.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { packagePath } from '../../../src/packageRoot.ts';
import { PROMETHEUS_RULE_FILE, printedPrometheusRule } from '../../../scripts/printPrometheusRule.ts';

interface Resource {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  [key: string]: unknown;
}

/** Every kind the manifests use, by apiVersion/kind. A manifest of any other kind fails the suite. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

const DIR = packagePath('deploy', 'kubernetes');

function loadResources(): Resource[] {
  return readdirSync(DIR)
    .filter((file) => file.endsWith('.yaml'))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(path.join(DIR, file), 'utf8')).map((document) => {
        if (document.errors.length) throw new Error(`${file}: ${document.errors[0]!.message}`);
        return document.toJS() as Resource;
      }),
    );
}

function validate(resource: Resource): void {
  const Model = MODELS[`${resource.apiVersion}/${resource.kind}`];
  if (!Model) throw new Error(`no schema for ${resource.apiVersion} ${resource.kind}`);
  new Model(resource as never).validate();
}

const resources = loadResources();
const byKind = (kind: string) => resources.filter((resource) => resource.kind === kind);

describe('Kubernetes manifests', () => {
  it('has every piece a production deployment needs', () => {
    expect(resources.map((resource) => resource.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'PrometheusRule', 'Service', 'ServiceMonitor'].sort(),
    );
  });

  it.each(resources.map((resource) => [`${resource.kind} ${resource.metadata.name}`, resource] as const))(
    '%s is valid against its schema',
    (_name, resource) => {
      expect(() => validate(resource)).not.toThrow();
    },
  );

  it('the schema check refuses a broken manifest', () => {
    const deployment = structuredClone(byKind('Deployment')[0]!) as Resource & { spec: { replicas: unknown } };
    deployment.spec.replicas = 'three';
    expect(() => validate(deployment)).toThrow(/replicas must be integer/);
  });

  it('probes readiness on /readyz and liveness on /healthz, and keeps two replicas through disruptions', () => {
    const container = (byKind('Deployment')[0] as unknown as {
      spec: { template: { spec: { containers: { readinessProbe: { httpGet: { path: string } }; livenessProbe: { httpGet: { path: string } } }[] } } };
    }).spec.template.spec.containers[0]!;
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect((byKind('PodDisruptionBudget')[0] as unknown as { spec: { minAvailable: number } }).spec.minAvailable).toBe(2);
  });

  it('loads exactly the alert rules in alerts/ (regenerate with `npm run deploy:rules`)', () => {
    expect(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')).toBe(printedPrometheusRule());
  });
});
