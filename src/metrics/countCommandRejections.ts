// Ceiling refusals were only in the ledger: this wraps the command backlog so every refused enqueue is also
// counted on ..._governance_command_rejections_total{tenant,reason}, where an alert can see it.
import type { CommandBacklog } from '../command-backlog/index.ts';
import type { Metrics } from './metrics.ts';

export function countCommandRejections(backlog: CommandBacklog, metrics: Pick<Metrics, 'addCommandRejection'>): CommandBacklog {
  return {
    async enqueue(actor, input) {
      const outcome = await backlog.enqueue(actor, input);
      if (outcome.status === 'rejected') metrics.addCommandRejection(input.tenantId, outcome.reason);
      return outcome;
    },
    markDelivered: (actor, command) => backlog.markDelivered(actor, command),
    markFailed: (actor, command) => backlog.markFailed(actor, command),
    cancel: (actor, command) => backlog.cancel(actor, command),
    expireOlderThanTtl: () => backlog.expireOlderThanTtl(),
  };
}
