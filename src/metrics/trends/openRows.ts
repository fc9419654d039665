// The packed rows of a family's open minutes (openMinutes.ts; migrations/0240_trend_open_minutes.sql): how a
// tenant's shard is chosen, and the rows they stand for, as a relation to read FROM (bucketRows adds them).
//
// A row of `<table>_open` is one minute (`minute_start`, unix seconds) of one shard of tenants; each key and count
// column is an array with an element per row of the minute table it stands for, so unnest() of the arrays side
// by side gives those rows. A tenant's shard is the first four bytes of the md5 of its ID (UTF-8), big-endian,
// modulo the family's `openShards`: computed here the same way in JavaScript (shardOf) and in SQL (shardSql),
// so a read of one tenant reads one shard.
import { createHash } from 'node:crypto';
import { BUCKET_SECONDS, type TrendBucket } from './buckets.ts';
import type { SourceKeys } from '../../ledger/index.ts';
import { openTable, type RollupFamily } from './rollupFamily.ts';

/** Tenants whose shard is remembered (a page asks for the same tenants' shards every second); cleared past it. */
const REMEMBERED_SHARDS = 1_000_000;
const shards = new Map<string, number>();

/** The shard of `tenantId` among `count` (the first four bytes of its md5, modulo `count`). */
export function shardOf(tenantId: string, count: number): number {
  return shardHashOf(tenantId) % count;
}

/** The first four bytes of the md5 of `tenantId` (UTF-8), big-endian: its shard among any count is this modulo the count. */
export function shardHashOf(tenantId: string): number {
  let hash = shards.get(tenantId);
  if (hash === undefined) {
    if (shards.size >= REMEMBERED_SHARDS) shards.clear();
    hash = createHash('md5').update(tenantId, 'utf8').digest().readUInt32BE(0);
    shards.set(tenantId, hash);
  }
  return hash;
}

/**
 * shardHashOf of a key source's tenants (src/ledger/catalog/summaryRefs.ts), by position, kept with the source
 * while it is remembered: a reference's summaries find their shard by position, not by a look-up of their tenant
 * ID in a map of every active tenant (at 50,000 active tenants that look-up was a tenth of the trends' work).
 * Filled as positions are first asked for, so a source of 50,000 keys costs no one turn of md5s.
 */
export class SourceShardHashes {
  private readonly bySource = new WeakMap<SourceKeys, Float64Array>();

  /** The hashes of `source`'s positions so far: 0 where not yet known, else the hash + 1 (hashOf fills them). */
  of(source: SourceKeys): Float64Array {
    let hashes = this.bySource.get(source);
    if (hashes === undefined) this.bySource.set(source, (hashes = new Float64Array(source.tenantId.length)));
    return hashes;
  }

  /** The shard hash of `source`'s tenant at `position`, `hashes` being `of(source)`. */
  static hashOf(hashes: Float64Array, source: SourceKeys, position: number): number {
    const known = hashes[position]!;
    if (known !== 0) return known - 1;
    const hash = shardHashOf(String(source.tenantId[position]));
    hashes[position] = hash + 1;
    return hash;
  }
}

/** SQL for the shard of the tenant ID `expression` (a parameter such as `$1`) among `count`: shardOf's rule. */
export function shardSql(expression: string, count: number): string {
  return `((('x' || substr(md5(${expression}::text), 1, 8))::bit(32)::bigint % ${count})::integer)`;
}

/**
 * The rows the family's open minutes stand for at one bucket size (keys, bucket_start, counts: the columns of
 * its tables), each in the minute, hour or day it falls in. With `tenantParam` (a parameter holding the only
 * tenant the caller reads), only that tenant's shard is read.
 */
export function openRows(family: RollupFamily, bucket: TrendBucket, tenantParam?: string): string {
  if (family.openShards === undefined) throw new Error(`the family ${family.table} holds no open minutes`);
  const size = BUCKET_SECONDS[bucket];
  const columns = [...family.keys, ...family.counts];
  const start = bucket === 'MINUTE' ? 'open.minute_start' : `open.minute_start - open.minute_start % ${size}`;
  const shard = tenantParam === undefined ? '' : ` WHERE open.shard = ${shardSql(tenantParam, family.openShards)}`;
  return `SELECT ${family.keys.map((key) => `packed.${key}`).join(', ')}, to_timestamp(${start}) AS bucket_start,
      ${family.counts.map((count) => `packed.${count}`).join(', ')}
    FROM ${openTable(family)} AS open
      CROSS JOIN LATERAL unnest(${columns.map((column) => `open.${column}`).join(', ')}) AS packed(${columns.join(', ')})${shard}`;
}
