import { randomUUID } from 'node:crypto';
import { InvalidAppend, type NewEvent } from '../eventStore.ts';

/** A batch in the column form the append statement unnests: one array per column, in batch order. */
export interface PreparedBatch {
  ids: string[];
  types: string[];
  data: string[];
  metadata: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Checks a batch and turns it into columns. Everything that would make PostgreSQL fail half-way (a bad uuid,
 * a value JSON cannot hold) is refused here, with InvalidAppend, before anything is sent.
 */
export function prepareBatch(stream: string, events: readonly NewEvent[]): PreparedBatch {
  if (typeof stream !== 'string' || stream.trim() === '') throw new InvalidAppend(String(stream), 'the stream name is empty');
  if (!Array.isArray(events) || events.length === 0) throw new InvalidAppend(stream, 'the batch has no events');
  const batch: PreparedBatch = { ids: [], types: [], data: [], metadata: [] };
  const seen = new Set<string>();
  events.forEach((event, index) => {
    const where = `event ${index}`;
    const id = event.id ?? randomUUID();
    if (typeof id !== 'string' || !UUID.test(id)) throw new InvalidAppend(stream, `${where}: id ${String(id)} is not a uuid`);
    const canonicalId = id.toLowerCase();
    if (seen.has(canonicalId)) throw new InvalidAppend(stream, `${where}: id ${id} appears twice in the batch`);
    seen.add(canonicalId);
    if (typeof event.type !== 'string' || event.type.trim() === '') throw new InvalidAppend(stream, `${where}: the type is empty`);
    if (event.metadata !== undefined && (typeof event.metadata !== 'object' || event.metadata === null || Array.isArray(event.metadata))) {
      throw new InvalidAppend(stream, `${where}: metadata must be an object`);
    }
    batch.ids.push(canonicalId);
    batch.types.push(event.type);
    batch.data.push(event.dataJson !== undefined ? checkedJson(stream, where, 'data', event.dataJson) : toJson(stream, where, 'data', event.data));
    batch.metadata.push(toJson(stream, where, 'metadata', event.metadata ?? {}));
  });
  return batch;
}

function toJson(stream: string, where: string, field: string, value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new InvalidAppend(stream, `${where}: ${field} is not JSON (${(error as Error).message})`);
  }
  if (json === undefined) throw new InvalidAppend(stream, `${where}: ${field} is missing or not JSON`);
  return checkedJson(stream, where, field, json);
}

function checkedJson(stream: string, where: string, field: string, json: string): string {
  // jsonb cannot hold the NUL character; PostgreSQL would reject the whole statement.
  if (json.includes('\\u0000')) throw new InvalidAppend(stream, `${where}: ${field} contains a NUL character`);
  return json;
}
