// Period quotas counted across replicas in the database, for a deployment without Redis (REDIS_URL unset) on
// PostgreSQL or PGlite: the QuotaBudget port the Governor reserves quota slices from (quotaMeter.ts), as it does
// from Redis' script (src/governance/redis/reserveScripts.ts, RESERVE_QUOTA), with the same arithmetic and so the
// same bounds. One row per tenant, dimension and period (gl_quota_usage); each reservation is one
// INSERT ... ON CONFLICT DO UPDATE, which locks the row, so two replicas never grant the same units.
//
// The Governor calls this off its hot path (a background reservation per slice, S = ceil(limit / 100) units),
// so a database round trip costs no admission its latency. Rows are deleted a day after their period ends.
import type { Db } from '../db/index.ts';
import type { QuotaBudget, QuotaGrant, QuotaReserveRequest } from '../governance/index.ts';

/** Rows of periods that ended more than this long ago are deleted (as Redis lets the count expire). */
const KEEP_AFTER_END_MS = 86_400_000;
/** How often, at most, a reservation also deletes ended periods' rows. */
const SWEEP_EVERY_MS = 3_600_000;

// The grant is at most what the limit leaves (want is at most the limit); in DO UPDATE every expression reads the row as it was (q.used).
const RESERVE_SQL = `
INSERT INTO gl_quota_usage AS q (tenant_id, dimension, period_start, period_end, used, last_grant)
VALUES ($1, $2, to_timestamp($3::double precision / 1000), to_timestamp($4::double precision / 1000),
        $6::bigint, $6::bigint)
ON CONFLICT (tenant_id, dimension, period_start) DO UPDATE SET
  used = q.used + LEAST($6::bigint, GREATEST(0, $5::bigint - q.used)),
  last_grant = LEAST($6::bigint, GREATEST(0, $5::bigint - q.used)),
  period_end = EXCLUDED.period_end
RETURNING used::text AS used, last_grant::text AS granted`;

export interface DatabaseQuotaBudgetOptions {
  now?: () => number;
  onError?: (error: unknown) => void;
}

/** Rejected, changing nothing: a request no replica of this version sends (the Governor counts it as a fault). */
export class InvalidQuotaReservation extends Error {
  override readonly name = 'InvalidQuotaReservation';
}

export function createDatabaseQuotaBudget(db: Db, options: DatabaseQuotaBudgetOptions = {}): QuotaBudget {
  const now = options.now ?? Date.now;
  const onError = options.onError ?? (() => {});
  let sweepAtMs = 0;
  return {
    async reserveQuota(request: QuotaReserveRequest): Promise<QuotaGrant> {
      const { limit, periodStartMs, periodEndMs } = request;
      if (!Number.isSafeInteger(limit) || limit <= 0 || !Number.isFinite(periodStartMs) || !Number.isFinite(periodEndMs) || periodEndMs <= periodStartMs) {
        throw new InvalidQuotaReservation('reserve quota: limit must be a positive integer and the period a finite span');
      }
      // As the Redis script: want counts at most one limit, and never less than nothing.
      const want = clampUnits(request.wantUnits, limit);
      const at = now();
      if (at >= sweepAtMs) {
        sweepAtMs = at + SWEEP_EVERY_MS;
        db.query('DELETE FROM gl_quota_usage WHERE period_end < to_timestamp($1::double precision / 1000)', [at - KEEP_AFTER_END_MS]).catch(onError);
      }
      const { rows } = await db.query<{ used: string; granted: string }>(RESERVE_SQL, [
        request.tenantId,
        request.dimension,
        periodStartMs,
        periodEndMs,
        limit,
        want,
      ]);
      const row = rows[0]!;
      return { granted: Number(row.granted), left: Math.max(0, limit - Number(row.used)) };
    },
  };
}

function clampUnits(units: number, limit: number): number {
  if (!Number.isFinite(units) || units <= 0) return 0;
  return Math.min(Math.ceil(units), limit);
}
