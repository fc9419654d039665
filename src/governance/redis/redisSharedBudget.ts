// The SharedBudget port over Redis (ioredis). Commands fail fast instead of queueing while the connection is
// down (no offline queue, a command timeout), so the Governor learns of an outage at once and meters at half
// the limit; ioredis keeps reconnecting in the background and the Governor's next probe finds it back.
import { Redis } from 'ioredis';
import type { ReserveRequest, SharedBudget } from '../sharedCounting.ts';
import type { QuotaGrant, QuotaReserveRequest } from '../quotaMeter.ts';
import { RESERVE_QUOTA, RESERVE_TOKENS, RESERVE_WINDOW } from './reserveScripts.ts';

export interface RedisSharedBudgetOptions {
  url: string;
  /** Prefix of every key (per deployment; tests use one per test). */
  keyPrefix?: string;
  commandTimeoutMs?: number;
  /** Connection errors; ioredis retries on its own, so these are for the log. */
  onError?: (error: Error) => void;
}

export interface RedisSharedBudget extends SharedBudget {
  /**
   * Resolves true once connected, or false after `timeoutMs`: the service waits briefly at startup so its
   * first admissions are not a fallback, but never blocks on a Redis that is down.
   */
  ready(timeoutMs?: number): Promise<boolean>;
}

interface ReserveCommands {
  glReserveTokens(key: string, rate: number, burst: number, atMs: number, want: number, debt: number): Promise<number>;
  glReserveWindow(key: string, limit: number, want: number, debt: number): Promise<number>;
  glReserveQuota(key: string, limit: number, want: number, debt: number, endMs: number): Promise<[number, number]>;
}

export function createRedisSharedBudget(options: RedisSharedBudgetOptions): RedisSharedBudget {
  const { url, keyPrefix = 'governance:', commandTimeoutMs = 250, onError = () => {} } = options;
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
  });
  redis.on('error', onError);
  redis.defineCommand('glReserveTokens', { numberOfKeys: 1, lua: RESERVE_TOKENS });
  redis.defineCommand('glReserveWindow', { numberOfKeys: 1, lua: RESERVE_WINDOW });
  redis.defineCommand('glReserveQuota', { numberOfKeys: 1, lua: RESERVE_QUOTA });
  const commands = redis as unknown as ReserveCommands;

  return {
    reserve(request: ReserveRequest): Promise<number> {
      if (request.kind === 'TOKEN_BUCKET') {
        return commands.glReserveTokens(
          keyPrefix + request.key,
          request.ratePerSecond,
          request.burst,
          request.atMs,
          request.wantUnits,
          request.debtUnits,
        );
      }
      const windowKey = `${keyPrefix}${request.key}:${Math.floor(request.atMs / 1000)}`;
      return commands.glReserveWindow(windowKey, request.ratePerSecond, request.wantUnits, request.debtUnits);
    },
    async reserveQuota(request: QuotaReserveRequest): Promise<QuotaGrant> {
      const [granted, left] = await commands.glReserveQuota(
        keyPrefix + request.key,
        request.limit,
        request.wantUnits,
        request.debtUnits,
        request.periodEndMs,
      );
      return { granted: Number(granted), left: Number(left) };
    },
    ready(timeoutMs = 2000) {
      if (redis.status === 'ready') return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          redis.off('ready', onReady);
          resolve(false);
        }, timeoutMs);
        const onReady = () => {
          clearTimeout(timer);
          resolve(true);
        };
        redis.once('ready', onReady);
      });
    },
    async close() {
      redis.disconnect();
    },
  };
}
