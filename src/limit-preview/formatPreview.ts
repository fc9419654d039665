// The preview as a table for the CLI (`governance limits preview`): one line per tenant, then the total.
import type { LimitChangePreview, WorstMinute } from './previewLimitChange.ts';
import type { LimitValue } from '../governance/index.ts';

const limitText = (value: LimitValue) => `${value.ratePerSecond}/s${value.burst !== undefined ? ` burst ${value.burst}` : ''}`;
const minuteText = (minute: WorstMinute | null) => (minute === null ? '-' : `${minute.start.toISOString().slice(0, 16)}Z ${minute.refusedUnits}`);

export function formatPreview(preview: LimitChangePreview): string {
  const header = ['tenant', 'now', 'proposed', 'demand units', 'refused units', 'refused msgs', 'limited s', 'worst minute', 'now refused units', 'refused then'];
  const rows = preview.tenants.map((tenant) => [
    tenant.tenantId,
    limitText(tenant.currentLimit),
    limitText(tenant.proposedLimit),
    String(tenant.demandUnits),
    String(tenant.refusedUnits),
    String(tenant.refusedMessages),
    String(tenant.limitedSeconds),
    minuteText(tenant.worstMinute),
    String(tenant.currentRefusedUnits),
    String(tenant.recordedRefusedUnits),
  ]);
  const { total } = preview;
  rows.push([
    `total (${preview.tenantsAffected} tenants)`,
    '',
    '',
    String(total.demandUnits),
    String(total.refusedUnits),
    String(total.refusedMessages),
    String(total.limitedSeconds),
    minuteText(total.worstMinute),
    String(total.currentRefusedUnits),
    String(total.recordedRefusedUnits),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  const title = `${preview.dimension} from ${preview.from.toISOString()} to ${preview.to.toISOString()}: a replay of recorded demand (retried refusals counted again; traffic never sent is unknown)`;
  return [title, line(header), ...rows.map(line)].join('\n');
}
