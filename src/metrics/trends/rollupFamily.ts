// A family of trend tables (one per bucket size) that share key and count columns. Projections add
// per-minute increments through `upsertRollups`, which rolls minutes up into hours and days; reads name the
// rows of a bucket size through `bucketRows`, pruning the tables through the family.
import { bucketTable, TREND_BUCKETS } from './buckets.ts';

export interface RollupFamily {
  /** Table name without the bucket suffix. */
  table: string;
  /** Text key columns, besides bucket_start. */
  keys: readonly string[];
  /** Whole-number count columns, summed on conflict. */
  counts: readonly string[];
  /** The tables' PRIMARY KEY columns, as migrations/0030_trends.sql declares them. */
  primaryKey: readonly string[];
  /**
   * The newest minutes held by the projection and written packed, in this many shards of tenants
   * (openMinutes.ts; `<table>_open` and `<table>_open_mark`); without it, every page upserts its minute rows.
   */
  openShards?: number;
}

export const ADMISSION_TRENDS: RollupFamily = {
  table: 'gl_admission_trends',
  keys: ['tenant_id', 'dimension', 'allowance'],
  counts: [
    'admitted_units',
    'admitted_messages',
    'shed_units',
    'shed_messages',
    'rejected_units',
    'rejected_messages',
    // migrations/0110_unauthenticated_admissions.sql
    'unauthenticated_units',
    'unauthenticated_messages',
    'hits',
    // migrations/0150_shadow_limited_trends.sql
    'shadow_limited_units',
    'shadow_limited_messages',
    // migrations/0195_quota_rejected_trends.sql
    'quota_rejected_units',
    'quota_rejected_messages',
  ],
  primaryKey: ['tenant_id', 'dimension', 'bucket_start', 'allowance'],
  // migrations/0240_trend_open_minutes.sql
  openShards: 64,
};

export const UNRESOLVED_ADMISSIONS: RollupFamily = {
  table: 'gl_unresolved_admissions',
  keys: ['tenant_id', 'dimension', 'cause'],
  counts: ['units', 'messages'],
  primaryKey: ['tenant_id', 'dimension', 'cause', 'bucket_start'],
};

export const INFERENCE_SPEND: RollupFamily = {
  table: 'gl_inference_spend',
  keys: ['tenant_id'],
  counts: ['input_tokens', 'output_tokens', 'requests'],
  primaryKey: ['tenant_id', 'bucket_start'],
};

export const ROLLUP_FAMILIES: readonly RollupFamily[] = [ADMISSION_TRENDS, UNRESOLVED_ADMISSIONS, INFERENCE_SPEND];

/** The one-row table saying how far the family's minutes are rolled up into hours and days (upsertRollups). */
export function rolledTable(family: RollupFamily): string {
  return `${family.table}_rolled`;
}

/** SQL for the family's mark, in unix seconds: 0 while nothing is rolled up (no row, as after a rebuild's truncation). */
export function rolledThrough(family: RollupFamily): string {
  return `(SELECT coalesce(max(rolled_through), 0) FROM ${rolledTable(family)})`;
}

/** Every table of the family's read model: emptied together when its projection is rebuilt. */
export function familyTables(family: RollupFamily): string[] {
  const open = family.openShards === undefined ? [] : [openTable(family), openMarkTable(family)];
  return [...TREND_BUCKETS.map((bucket) => bucketTable(family.table, bucket)), rolledTable(family), ...open];
}

/** The packed rows of a family's open minutes (openMinutes.ts). */
export function openTable(family: RollupFamily): string {
  return `${family.table}_open`;
}

/** The one-row table naming the page that wrote a family's open minutes last (openMinutes.ts). */
export function openMarkTable(family: RollupFamily): string {
  return `${family.table}_open_mark`;
}
