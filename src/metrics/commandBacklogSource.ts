// The command backlog gauge's source: the `named` largest backlogs by tenant, with their ceilings from
// loadCommandBacklogs, and the rest summed into one tenant="_other" sample (OTHER_TENANTS). Two small queries
// per scrape whatever the number of tenants (the guard table's count is the authoritative one;
// src/command-backlog owns it).
import type { Queryable } from '../db/db.ts';
import { loadCommandBacklogs } from '../command-backlog/index.ts';
import { OTHER_TENANTS } from './tenantLabels.ts';
import type { CommandBacklogSample } from './sources.ts';

export function commandBacklogSource(q: Queryable, named: number): () => Promise<CommandBacklogSample[]> {
  return async () => {
    const largest = await q.query<{ tenant_id: string }>(
      'SELECT tenant_id FROM gl_command_backlog_guard WHERE undelivered > 0 ORDER BY undelivered DESC, tenant_id LIMIT $1',
      [named],
    );
    const ids = largest.rows.map((row) => row.tenant_id);
    const [backlogs, rest] = await Promise.all([
      loadCommandBacklogs(q, ids),
      q.query<{ undelivered: number }>(
        'SELECT coalesce(sum(undelivered), 0)::float8 AS undelivered FROM gl_command_backlog_guard WHERE NOT (tenant_id = ANY($1::text[]))',
        [ids],
      ),
    ]);
    const samples: CommandBacklogSample[] = [...backlogs.values()].map(({ tenantId, undelivered, ceiling }) => ({ tenantId, undelivered, ceiling }));
    const otherUndelivered = rest.rows[0]?.undelivered ?? 0;
    if (otherUndelivered > 0) samples.push({ tenantId: OTHER_TENANTS, undelivered: otherUndelivered, ceiling: 0 });
    return samples;
  };
}
