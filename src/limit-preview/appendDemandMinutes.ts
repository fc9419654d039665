// Writes collected seconds (DemandMinutes) to the read model in one statement: each minute's records are
// appended to its row (bytea ||), the row made when it is the minute's first. writeDemand (openDemand.ts) makes
// the parameter before the page's first write and appends once per page, in the page's checkpointed
// transaction, so every summary's seconds are appended exactly once.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Queryable } from '../db/db.ts';
import { prepared } from '../db/preparedStatements.ts';
import type { DemandMinutes } from './demandSeconds.ts';

/** Rows serialized per turn of the event loop (a few ms each). */
const ROWS_PER_SLICE = 10_000;

// The rows as one JSON parameter of arrays [dimension, tenant, minute start, allowance, records as hex]: one
// round trip per page whatever its size, as the trend projection writes its rows. Named: planned once.
const APPEND_SQL = prepared(`
INSERT INTO gl_demand_seconds AS d (dimension, tenant_id, minute_start, allowance, seconds)
SELECT r->>0, r->>1, (r->>2)::bigint, r->>3, decode(r->>4, 'hex') FROM jsonb_array_elements($1::jsonb) AS r
ON CONFLICT (dimension, tenant_id, minute_start, allowance) DO UPDATE SET seconds = d.seconds || EXCLUDED.seconds`);

/** The rows of `minutes` as the append's parameter, made a slice at a time; null when there are none. */
export async function demandRowsParameter(minutes: DemandMinutes): Promise<string | null> {
  if (minutes.size === 0) return null;
  let json = '[';
  let rows = 0;
  for (const minute of minutes.values()) {
    if (rows > 0) json += ',';
    json += JSON.stringify([minute.dimension, minute.tenantId, minute.minuteStart, minute.allowance, Buffer.from(minute.bytes).toString('hex')]);
    if (++rows % ROWS_PER_SLICE === 0) await yieldTurn();
  }
  return `${json}]`;
}

/** Appends the rows demandRowsParameter made, in one statement. */
export async function appendDemandRows(tx: Queryable, parameter: string | null): Promise<void> {
  if (parameter !== null) await tx.query(APPEND_SQL, [parameter]);
}
