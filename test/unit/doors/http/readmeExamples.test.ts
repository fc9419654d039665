// The bodies the READMEs show for the HTTP doors are bodies the doors take: each `curl ... /v1/ingest/...` and
// `curl ... /v1/admissions` example of README.md, and the reading format of src/doors/http/README.md, is taken
// out of the text and decoded by the doors' own code. An example that drifts from the format (a deviceId at the
// top level, which the strict body refuses) fails here. The GraphQL steps of the same README are replayed
// against a running service in test/e2e/readmeSteps.test.ts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAdmissionItem } from '../../../../src/doors/admissions/admissionItem.ts';
import { decodeReadings } from '../../../../src/doors/pipeline/readings.ts';
import type { AdmitRequest } from '../../../../src/governance/index.ts';
import { curlBodies, multilineCurlBodies } from '../../../support/readmeExamples.ts';

const ROOT = path.resolve(import.meta.dirname, '../../../..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe("the README's examples of the HTTP doors", () => {
  it('every ingest body is one the ingest door decodes', () => {
    const bodies = curlBodies(readme, '/v1/ingest/');
    expect(bodies.length).toBeGreaterThan(0);
    for (const body of bodies) expect(decodeReadings(Buffer.from(body)), body).toMatchObject({ status: 'decoded' });
  });

  it('every admissions body holds items the admission API takes', () => {
    // The admissions example spans lines inside its quotes: take the quoted body whole.
    const bodies = multilineCurlBodies(readme, '/v1/admissions');
    expect(bodies.length).toBeGreaterThan(0);
    const into = { tenant: '', dimension: 'INGEST', units: 0, at: 0 } as AdmitRequest;
    for (const body of bodies) {
      const { items } = JSON.parse(body) as { items: unknown[] };
      expect(items.length).toBeGreaterThan(0);
      // The example's instants are fixed: check them at the instant they name, so the example does not age out.
      for (const item of items) {
        const at = (item as { at?: string }).at;
        expect(readAdmissionItem(item, at ? Date.parse(at) : Date.now(), into), JSON.stringify(item)).toBeNull();
      }
    }
  });

  it("the reading format of the HTTP door's README decodes to the readings it says", () => {
    const doorReadme = readFileSync(path.join(ROOT, 'src/doors/http/README.md'), 'utf8');
    const format = /## Reading format[\s\S]*?```json\n([\s\S]*?)```\ncosts (\d+) readings/.exec(doorReadme);
    expect(format).not.toBeNull();
    expect(decodeReadings(Buffer.from(format![1]!))).toMatchObject({ status: 'decoded', readingCount: Number(format![2]) });
  });

  it('refuses a deviceId at the top level, naming it, as the format is strict', () => {
    const decoded = decodeReadings(Buffer.from('{"deviceId":"pump-1","readings":[{"measurements":{"pressure":1.2}}]}'));
    expect(decoded).toEqual({ status: 'invalid', message: 'unknown field "deviceId" at the top level: "deviceId" belongs in each reading; expected {"readings": [ ... ]}' });
    expect(decodeReadings(Buffer.from('{"readings":[],"extra":1}'))).toMatchObject({ status: 'invalid', message: expect.stringContaining('unknown field "extra"') });
  });
});
