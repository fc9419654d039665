// The start-up hint names the secret the service signs with and, for a data directory other than ./data, the
// --data-dir that `governance token` needs to use the same one (a token minted for another directory got a 401).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tokenVerifierFor } from '../../../src/api/createGraphQLRoute.ts';
import { readSettings } from '../../../src/config.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'gl-hint-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function hintFor(env: Record<string, string>): Promise<string> {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  await tokenVerifierFor(readSettings(env), logger);
  const hint = lines.map((line) => JSON.parse(line) as { msg: string }).find((line) => line.msg.startsWith('GraphQL tokens are signed'));
  return hint!.msg;
}

it('names the secret file and the --data-dir of a data directory other than ./data', async () => {
  const hint = await hintFor({ GOVERNANCE_DATA_DIR: dir });
  expect(hint).toBe(
    `GraphQL tokens are signed with the secret in ${path.join(dir, 'jwt-secret')}; mint one with: npx governance token --role OPERATOR --ttl 1h --data-dir ${dir}`,
  );
});

it('names GOVERNANCE_JWT_SECRET when the secret comes from the environment', async () => {
  const hint = await hintFor({ GOVERNANCE_DATA_DIR: dir, GOVERNANCE_JWT_SECRET: 'an-environment-secret-0123456789abcdefgh' });
  expect(hint).toBe('GraphQL tokens are signed with GOVERNANCE_JWT_SECRET; mint one with the same GOVERNANCE_JWT_SECRET set, with: npx governance token --role OPERATOR --ttl 1h');
});
