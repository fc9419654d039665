// The SharedBudget port over Redis (ioredis): one node, or a Redis Cluster through ioredis' Cluster client.
// Commands fail fast instead of queueing while the connection is down (no offline queue, a command timeout),
// so the Governor learns of an outage at once and meters at half the limit; ioredis keeps reconnecting in the
// background and the Governor's next probe finds it back.
//
// On a cluster every reservation is one script over one key, and every key of one tenant carries the tenant
// as its hash tag (sharedCounting.ts), so a script never spans slots. When a master fails, its slots' scripts
// fail (connection refused, then CLUSTERDOWN or a timeout) until a replica is promoted; the Governor meters
// at half the limit meanwhile, and the client learns the new owner from a MOVED reply or its periodic look at
// the slots, whichever comes first.
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import type { ReserveRequest, SharedBudget } from '../sharedCounting.ts';
import type { QuotaGrant, QuotaReserveRequest } from '../quotaMeter.ts';
import { RESERVE_QUOTA, RESERVE_TOKENS, RESERVE_WINDOW } from './reserveScripts.ts';

export interface RedisSharedBudgetOptions {
  /** A `redis://` (or `rediss://`) URL; with `cluster`, or several URLs comma-separated, a cluster's seed nodes. */
  url: string;
  /** The URL names a Redis Cluster (REDIS_CLUSTER=on); implied by several comma-separated URLs. */
  cluster?: boolean;
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
  glReserveQuota(key: string, limit: number, want: number, endMs: number): Promise<[number, number]>;
}

/** How often a cluster client reads the slot map even when no reply told it of a move. */
const SLOTS_REFRESH_INTERVAL_MS = 1000;

export function createRedisSharedBudget(options: RedisSharedBudgetOptions): RedisSharedBudget {
  const { keyPrefix = 'governance:', commandTimeoutMs = 250, onError = () => {} } = options;
  const urls = options.url
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  const nodeOptions: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
  };
  const redis =
    options.cluster === true || urls.length > 1
      ? new Cluster(urls.map(clusterNode), {
          enableOfflineQueue: false,
          redisOptions: { ...nodeOptions, ...credentials(urls[0]!) },
          // A failed-over slot is learnt from the next MOVED, or from this look at the map at the latest.
          slotsRefreshInterval: SLOTS_REFRESH_INTERVAL_MS,
          slotsRefreshTimeout: 1000,
          clusterRetryStrategy: (attempt) => Math.min(attempt * 100, 1000),
        })
      : new Redis(urls[0] ?? options.url, nodeOptions);
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

/** A seed node of a cluster from its URL; credentials and TLS are the same for every node (see credentials). */
function clusterNode(url: string): ClusterNode {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 6379) };
}

/** The user, password and TLS of the first URL, for every node of the cluster, including those it discovers. */
function credentials(url: string): RedisOptions {
  const parsed = new URL(url);
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}
