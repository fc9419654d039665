// Command-delivery's view of a tenant's commands: every accepted command with its device, payload, status and
// times (a Relay connection, newest first), and the refusals at the backlog ceiling per time bucket. Both
// read projections/commandList.ts.
import { builder } from '../builder.ts';
import { staleDb } from '../context.ts';
import { GraphQLError } from '../graphql.ts';
import { decodeCursor, pageSize, toConnection } from '../paging.ts';
import { BUCKET_SECONDS, floorTo, type TrendBucket } from '../../metrics/index.ts';
import { TrendBucketEnum } from './enums.ts';

const COMMAND_STATUSES = ['QUEUED', 'DELIVERED', 'FAILED', 'CANCELLED', 'EXPIRED'] as const;
type CommandStatus = (typeof COMMAND_STATUSES)[number];

const CommandStatusEnum = builder.enumType('CommandStatus', {
  description: 'QUEUED: in the backlog, counted against the ceiling; the others: settled, out of the backlog.',
  values: COMMAND_STATUSES,
});

interface CommandRecord {
  tenantId: string;
  commandId: string;
  deviceId: string;
  payload: unknown;
  status: CommandStatus;
  enqueuedAt: Date;
  settledAt: Date | null;
  error: string | null;
  reason: string | null;
}

const CommandType = builder.objectRef<CommandRecord>('Command').implement({
  description: 'A command accepted into a tenant’s backlog, and what became of it.',
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    commandId: t.exposeID('commandId'),
    deviceId: t.exposeID('deviceId'),
    payload: t.field({ type: 'JSON', nullable: true, resolve: (command) => command.payload }),
    status: t.field({ type: CommandStatusEnum, resolve: (command) => command.status }),
    enqueuedAt: t.field({ type: 'DateTime', resolve: (command) => command.enqueuedAt }),
    settledAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was delivered, failed, cancelled or expired.', resolve: (command) => command.settledAt }),
    error: t.exposeString('error', { nullable: true, description: 'FAILED only: what delivery reported.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'CANCELLED only: the reason the canceller gave (cancelCommand).' }),
  }),
});

const CommandConnection = builder.connectionObject({ type: CommandType, name: 'CommandConnection' });

interface RejectionPoint {
  start: Date;
  rejected: number;
  ceilingReached: number;
  unknownTenant: number;
}

const CommandRejectionPointType = builder.objectRef<RejectionPoint>('CommandRejectionPoint').implement({
  description: 'Commands refused in one bucket (every bucket of the range, zeros included).',
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (point) => point.start }),
    rejected: t.exposeInt('rejected', { description: 'All refusals.' }),
    ceilingReached: t.exposeInt('ceilingReached', { description: 'Refused at the UNDELIVERED_COMMANDS ceiling.' }),
    unknownTenant: t.exposeInt('unknownTenant', { description: 'Refused for a tenant that is not registered.' }),
  }),
});

/** At most this many buckets in one trend answer. */
const MAX_BUCKETS = 10_000;

interface Row {
  tenant_id: string;
  command_id: string;
  device_id: string;
  payload: unknown;
  status: string;
  enqueued_at: Date;
  settled_at: Date | null;
  error: string | null;
  reason: string | null;
}

function parseCommandCursor(key: string): { enqueuedAt: Date; commandId: string } {
  const split = key.indexOf('|');
  const enqueuedAt = new Date(key.slice(0, split));
  if (split < 0 || Number.isNaN(enqueuedAt.getTime())) {
    throw new GraphQLError('after is not a cursor this API handed out', { extensions: { code: 'BAD_CURSOR', field: 'after' } });
  }
  return { enqueuedAt, commandId: key.slice(split + 1) };
}

builder.queryFields((t) => ({
  commands: t.field({
    type: CommandConnection,
    description: 'A tenant’s accepted commands, newest first, optionally of one status.',
    args: {
      tenantId: t.arg.id({ required: true }),
      status: t.arg({ type: CommandStatusEnum }),
      first: t.arg.int(),
      after: t.arg.string(),
    },
    authScopes: (_root, { tenantId }) => ({ readTenant: tenantId }),
    resolve: async (_root, args, context) => {
      const db = staleDb(context);
      const first = pageSize(args.first);
      const key = decodeCursor(args.after);
      const cursor = key === undefined ? null : parseCommandCursor(key);
      const { rows } = await db.query<Row>(
        `SELECT tenant_id, command_id, device_id, payload, status, enqueued_at, settled_at, error, reason FROM gl_command_list
          WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2)
            AND ($3::timestamptz IS NULL OR (enqueued_at, command_id) < ($3::timestamptz, $4::text))
          ORDER BY enqueued_at DESC, command_id DESC LIMIT $5`,
        [args.tenantId, args.status?.toLowerCase() ?? null, cursor?.enqueuedAt ?? null, cursor?.commandId ?? null, first + 1],
      );
      const nodes = rows.slice(0, first).map(
        (row): CommandRecord => ({
          tenantId: row.tenant_id,
          commandId: row.command_id,
          deviceId: row.device_id,
          payload: typeof row.payload === 'string' ? (JSON.parse(row.payload) as unknown) : row.payload,
          status: row.status.toUpperCase() as CommandStatus,
          enqueuedAt: new Date(row.enqueued_at),
          settledAt: row.settled_at === null ? null : new Date(row.settled_at),
          error: row.error,
          reason: row.reason,
        }),
      );
      return toConnection({ nodes, hasNextPage: rows.length > first }, (node) => `${node.enqueuedAt.toISOString()}|${node.commandId}`);
    },
  }),
  commandRejectionTrend: t.field({
    type: [CommandRejectionPointType],
    description: 'Commands refused for a tenant per bucket over [from, to), every bucket of the range, zeros included.',
    args: {
      tenantId: t.arg.id({ required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      bucket: t.arg({ type: TrendBucketEnum, required: true }),
    },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: async (_root, { tenantId, from, to, bucket }, context) => {
      const db = staleDb(context);
      const size = BUCKET_SECONDS[bucket as TrendBucket];
      const first = floorTo(Math.floor(from.getTime() / 1000), bucket as TrendBucket);
      const end = Math.ceil(to.getTime() / 1000);
      if (end <= first) throw new GraphQLError('to must be after from', { extensions: { code: 'BAD_USER_INPUT', field: 'to' } });
      if ((end - first) / size > MAX_BUCKETS) {
        throw new GraphQLError(`at most ${MAX_BUCKETS} buckets: choose a larger bucket or a shorter range`, { extensions: { code: 'BAD_USER_INPUT', field: 'bucket' } });
      }
      const { rows } = await db.query<{ start_second: string | number; reason: string; rejected: string | number }>(
        `SELECT (floor(extract(epoch FROM bucket_start) / $4) * $4)::bigint AS start_second, reason, sum(rejected)::bigint AS rejected
           FROM gl_command_rejections_minute
          WHERE tenant_id = $1 AND bucket_start >= to_timestamp($2) AND bucket_start < to_timestamp($3)
          GROUP BY 1, 2`,
        [tenantId, first, end, size],
      );
      const points = new Map<number, RejectionPoint>();
      for (let second = first; second < end; second += size) {
        points.set(second, { start: new Date(second * 1000), rejected: 0, ceilingReached: 0, unknownTenant: 0 });
      }
      for (const row of rows) {
        const point = points.get(Number(row.start_second));
        if (!point) continue;
        const count = Number(row.rejected);
        point.rejected += count;
        if (row.reason === 'CEILING_REACHED') point.ceilingReached += count;
        if (row.reason === 'UNKNOWN_TENANT') point.unknownTenant += count;
      }
      return [...points.values()];
    },
  }),
}));
