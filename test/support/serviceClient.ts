// GraphQL over HTTP to a running service, as any client would: tokens minted with the secret the service made
// in its data directory, one POST per operation, the whole JSON answer returned (data and errors alike).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { mintToken } from '../../src/auth/token.ts';
import { JWT_SECRET_FILE } from '../../src/auth/jwtSecret.ts';
import type { Role } from '../../src/control-plane/controlPlaneCommand.ts';
import type { RunningService } from './serviceModes.ts';

export interface HttpAnswer<Data = Record<string, unknown>> {
  status: number;
  data?: Data | null;
  errors?: Array<{ message: string; path?: string[]; extensions?: Record<string, unknown> }>;
}

export interface ServiceClient {
  token(role: Role, tenant?: string, ttl?: number | string): Promise<string>;
  gql<Data = Record<string, unknown>>(token: string | null, query: string, variables?: Record<string, unknown>): Promise<HttpAnswer<Data>>;
  /** Runs an operation as `role` and fails on any GraphQL error. */
  as(role: Role, tenant?: string): <Data = Record<string, unknown>>(query: string, variables?: Record<string, unknown>) => Promise<Data>;
}

export async function serviceClient(running: RunningService): Promise<ServiceClient> {
  const secret = (await readFile(path.join(running.dataDir, JWT_SECRET_FILE), 'utf8')).trim();
  const token = (role: Role, tenant?: string, ttl: number | string = '10m') => mintToken({ secret, role, tenant, sub: `e2e-${role.toLowerCase()}`, ttl });
  const gql = async <Data>(bearer: string | null, query: string, variables?: Record<string, unknown>): Promise<HttpAnswer<Data>> => {
    const response = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    const text = await response.text();
    let body: Omit<HttpAnswer<Data>, 'status'>;
    try {
      body = JSON.parse(text) as Omit<HttpAnswer<Data>, 'status'>;
    } catch {
      body = { errors: [{ message: text }] };
    }
    return { status: response.status, ...body };
  };
  return {
    token,
    gql,
    as: (role, tenant) => async (query, variables) => {
      const answer = await gql(await token(role, tenant), query, variables);
      if (answer.errors?.length || !answer.data) throw new Error(`${query.slice(0, 80)}: ${JSON.stringify(answer.errors ?? answer)}`);
      return answer.data as never;
    },
  };
}
