// What a limit change would have refused, shown before it is applied: the form that edits a limit (an
// override on the Tenant page, a tier limit or platform default on the Platform page) asks limitChangePreview
// for the change as typed, and this draws its series as inline SVG: the recorded demand (the busiest second
// one limiter saw, and the average per second), the limit in force now and the one proposed, and below it
// what each would have refused. The figures are written out beside the chart for whoever cannot see it.
import { useState } from 'preact/hooks';
import { formatLimit, gql, type LimitValue } from './api.ts';

export interface PreviewPoint {
  start: string;
  seconds: number;
  demandUnits: number;
  peakUnitsPerSecond: number;
  refusedUnits: number;
  currentRefusedUnits: number;
  recordedRefusedUnits: number;
}

interface Figures {
  demandUnits: number;
  refusedUnits: number;
  refusedMessages: number;
  limitedSeconds: number;
  currentRefusedUnits: number;
  currentRefusedMessages: number;
  recordedRefusedUnits: number;
}

export interface Preview {
  from: string;
  to: string;
  tenantsAffected: number;
  proposedLimit: LimitValue;
  total: Figures;
  tenants: Array<{ tenantId: string; currentLimit: LimitValue }>;
  series: PreviewPoint[];
}

const VALUE = '{ ratePerSecond burst ceiling }';
const PREVIEW = `query ($override: SetTenantOverrideInput, $tierLimit: SetTierLimitInput, $platformDefault: SetPlatformDefaultInput, $from: DateTime) {
  limitChangePreview(override: $override, tierLimit: $tierLimit, platformDefault: $platformDefault, from: $from, first: 1) {
    from to tenantsAffected proposedLimit ${VALUE}
    total { demandUnits refusedUnits refusedMessages limitedSeconds currentRefusedUnits currentRefusedMessages recordedRefusedUnits }
    tenants { tenantId currentLimit ${VALUE} }
    series { start seconds demandUnits peakUnitsPerSecond refusedUnits currentRefusedUnits recordedRefusedUnits }
  }
}`;

/** The ranges offered, in hours back from now (the API's default and most common question is the last week). */
const RANGES: Array<[number, string]> = [
  [168, 'the last 7 days'],
  [24, 'the last day'],
  [1, 'the last hour'],
];

export type ProposedChange = { override: Record<string, unknown> } | { tierLimit: Record<string, unknown> } | { platformDefault: Record<string, unknown> };

/**
 * A "Preview" button and, once asked, the chart of what `change()` would have refused. `change` returns the
 * change as typed so far, or a sentence saying what is missing; `id` keeps the controls' ids unique on a page.
 */
export function LimitPreview({ id, change }: { id: string; change(): ProposedChange | string }) {
  const [hours, setHours] = useState(168);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [note, setNote] = useState('');
  async function run() {
    const proposed = change();
    setPreview(null);
    if (typeof proposed === 'string') {
      setNote(proposed);
      return;
    }
    setNote('Replaying the recorded demand…');
    try {
      const data = await gql<{ limitChangePreview: Preview }>(PREVIEW, { ...proposed, from: new Date(Date.now() - hours * 3_600_000).toISOString() });
      setPreview(data.limitChangePreview);
      setNote('');
    } catch (error) {
      setNote(`The preview is not available: ${(error as Error).message}`);
    }
  }
  return (
    <div class="preview">
      <div class="row">
        <label for={`${id}-preview-range`}>Replay</label>
        <select id={`${id}-preview-range`} value={hours} onChange={(event) => setHours(Number(event.currentTarget.value))}>
          {RANGES.map(([each, words]) => (
            <option value={each}>{words}</option>
          ))}
        </select>
        <button type="button" onClick={() => void run()}>
          Preview what it would refuse
        </button>
      </div>
      <div aria-live="polite">
        {note && <p class="muted">{note}</p>}
        {preview && <PreviewFigure preview={preview} />}
      </div>
    </div>
  );
}

const n = (value: number) => Math.round(value).toLocaleString('en');

function PreviewFigure({ preview }: { preview: Preview }) {
  const { total } = preview;
  const current = preview.tenants[0]?.currentLimit ?? null;
  if (preview.tenantsAffected === 0) {
    return (
      <p data-testid="preview-summary">
        No recorded demand between {new Date(preview.from).toLocaleString()} and {new Date(preview.to).toLocaleString()} would be limited differently: no
        tenant with traffic in that range has its limit moved by this change.
      </p>
    );
  }
  return (
    <figure class="chart preview-chart">
      <figcaption>
        Recorded demand replayed through the proposed limit ({formatLimit(preview.proposedLimit)}) and the limit in force now ({formatLimit(current)})
        {preview.tenantsAffected > 1 ? `, over ${n(preview.tenantsAffected)} tenants` : ''}
      </figcaption>
      <PreviewChart series={preview.series} proposed={preview.proposedLimit.ratePerSecond} current={current?.ratePerSecond ?? null} tenants={preview.tenantsAffected} />
      <p data-testid="preview-summary">
        Of {n(total.demandUnits)} units offered, the proposed limit would have refused <strong data-testid="preview-refused">{n(total.refusedUnits)}</strong> units (
        {n(total.refusedMessages)} requests, in {n(total.limitedSeconds)} seconds); the limit in force now would have refused{' '}
        <span data-testid="preview-current-refused">{n(total.currentRefusedUnits)}</span>, and {n(total.recordedRefusedUnits)} were refused then. A replay
        counts a retried refusal again and cannot know traffic that was never sent.
      </p>
    </figure>
  );
}

const WIDTH = 720;
const TOP = 190;
const GAP = 28;
const BOTTOM = 80;
const LEFT = 56;
const RIGHT = 12;
const HEIGHT = 12 + TOP + GAP + BOTTOM + 26;

/** A scale's top: the largest value, raised to 1, 2 or 5 times a power of ten. */
function niceTop(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * power).find((top) => top >= value)!;
}

function timeLabel(iso: string, spanMs: number): string {
  const at = new Date(iso);
  return spanMs > 86_400_000 ? at.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) + ' ' + at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) : at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

/**
 * Two panels sharing the time axis. Top, in units per second: the busiest second of one tenant in each bucket
 * (an area: what a limit per second acts on), the average per second of all affected tenants together (a
 * line), the limit in force now (solid) and the proposed one (dashed). Below, in units per bucket: what the
 * proposed limit would have refused (red bars) beside what the limit in force now would have (grey).
 */
export function PreviewChart({ series, proposed, current, tenants }: { series: PreviewPoint[]; proposed: number | null; current: number | null; tenants: number }) {
  const count = Math.max(1, series.length);
  const plotWidth = WIDTH - LEFT - RIGHT;
  const step = plotWidth / count;
  const x = (index: number) => LEFT + index * step;
  const rateTop = niceTop(Math.max(proposed ?? 0, current ?? 0, ...series.map((point) => Math.max(point.peakUnitsPerSecond, point.demandUnits / point.seconds))) * 1.1);
  const yRate = (value: number) => 12 + TOP - (Math.min(value, rateTop) / rateTop) * TOP;
  const refusedTop = niceTop(Math.max(...series.map((point) => Math.max(point.refusedUnits, point.currentRefusedUnits)), 0));
  const bottomY = 12 + TOP + GAP;
  const yRefused = (value: number) => bottomY + BOTTOM - (value / refusedTop) * BOTTOM;
  const peakPath =
    series.length === 0
      ? ''
      : `M ${x(0)} ${yRate(0)} ` + series.map((point, index) => `L ${x(index)} ${yRate(point.peakUnitsPerSecond)} L ${x(index + 1)} ${yRate(point.peakUnitsPerSecond)}`).join(' ') + ` L ${x(series.length)} ${yRate(0)} Z`;
  const averagePath = series.map((point, index) => `${index === 0 ? 'M' : 'L'} ${x(index) + step / 2} ${yRate(point.demandUnits / point.seconds)}`).join(' ');
  const spanMs = series.length ? new Date(series.at(-1)!.start).getTime() - new Date(series[0]!.start).getTime() : 0;
  const label = `Chart: demand in units per second against the limit in force now (${current ?? 'none'}/s) and the proposed limit (${proposed ?? 'none'}/s); below, units the proposed limit would have refused per ${series[0] ? series[0].seconds / 60 : 1} minute(s).`;
  return (
    <svg class="preview-svg" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={label} data-testid="preview-chart" preserveAspectRatio="xMidYMid meet">
      {/* Scales */}
      <line x1={LEFT} x2={WIDTH - RIGHT} y1={yRate(0)} y2={yRate(0)} class="axis" />
      <line x1={LEFT} x2={LEFT} y1={12} y2={yRate(0)} class="axis" />
      {[0, rateTop / 2, rateTop].map((tick) => (
        <text x={LEFT - 6} y={yRate(tick) + 4} text-anchor="end" class="tick">
          {n(tick)}
        </text>
      ))}
      <path d={peakPath} class="peak" data-testid="preview-peak" />
      <path d={averagePath} class="average" fill="none" />
      {current !== null && (
        <g data-testid="preview-current-limit">
          <line x1={LEFT} x2={WIDTH - RIGHT} y1={yRate(current)} y2={yRate(current)} class="limit-current" />
          <text x={WIDTH - RIGHT - 4} y={yRate(current) - 4} text-anchor="end" class="tick">
            in force now {n(current)}/s
          </text>
        </g>
      )}
      {proposed !== null && (
        <g data-testid="preview-proposed-limit">
          <line x1={LEFT} x2={WIDTH - RIGHT} y1={yRate(proposed)} y2={yRate(proposed)} class="limit-proposed" />
          <text x={LEFT + 4} y={yRate(proposed) - 4} class="tick proposed">
            proposed {n(proposed)}/s
          </text>
        </g>
      )}
      {/* What would have been refused, per bucket */}
      <line x1={LEFT} x2={WIDTH - RIGHT} y1={bottomY + BOTTOM} y2={bottomY + BOTTOM} class="axis" />
      <text x={4} y={bottomY - 6} class="tick">
        refused units per {series[0] ? series[0].seconds / 60 : 1} min: proposed (red), in force now (grey)
      </text>
      <text x={LEFT - 6} y={bottomY + 4} text-anchor="end" class="tick">
        {n(refusedTop)}
      </text>
      {series.map((point, index) =>
        point.currentRefusedUnits > 0 ? (
          <rect x={x(index) + step * 0.5} width={Math.max(1, step * 0.45)} y={yRefused(point.currentRefusedUnits)} height={bottomY + BOTTOM - yRefused(point.currentRefusedUnits)} class="refused-current" />
        ) : null,
      )}
      {series.map((point, index) =>
        point.refusedUnits > 0 ? (
          <rect x={x(index) + step * 0.05} width={Math.max(1, step * 0.45)} y={yRefused(point.refusedUnits)} height={bottomY + BOTTOM - yRefused(point.refusedUnits)} class="refused" data-testid="preview-refused-bar" />
        ) : null,
      )}
      {series.length > 0 &&
        [0, Math.floor((series.length - 1) / 2), series.length - 1].map((index, position) => (
          <text x={position === 0 ? LEFT : position === 2 ? WIDTH - RIGHT : x(index)} y={HEIGHT - 6} text-anchor={position === 0 ? 'start' : position === 2 ? 'end' : 'middle'} class="tick">
            {timeLabel(series[index]!.start, spanMs)}
          </text>
        ))}
      <text x={LEFT + 4} y={24} class="tick">
        {`units per second · area: the busiest second${tenants > 1 ? ' of one tenant' : ''}; line: the average per second${tenants > 1 ? ` of all ${n(tenants)} tenants together` : ''}`}
      </text>
    </svg>
  );
}
