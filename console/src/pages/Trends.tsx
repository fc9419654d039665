import { useEffect, useMemo, useState } from 'preact/hooks';
import { DIMENSIONS, gql, seesEveryTenant, subscribe, type Viewer } from '../api.ts';
import { TimeChart } from '../chart.tsx';
import { go, useLoad } from '../hooks.ts';

type Bucket = 'MINUTE' | 'HOUR' | 'DAY';
/** How often an open Trends page reads its trend again, for the admitted-only traffic no subscription announces. */
const LIVE_POLL_MS = 5_000;
const BUCKET_SECONDS: Record<Bucket, number> = { MINUTE: 60, HOUR: 3600, DAY: 86_400 };
const PRESETS: Array<{ key: string; label: string; seconds: number; bucket: Bucket }> = [
  { key: '1h', label: 'Last hour, per minute', seconds: 3600, bucket: 'MINUTE' },
  { key: '6h', label: 'Last 6 hours, per minute', seconds: 6 * 3600, bucket: 'MINUTE' },
  { key: '24h', label: 'Last 24 hours, per hour', seconds: 86_400, bucket: 'HOUR' },
  { key: '7d', label: 'Last 7 days, per hour', seconds: 7 * 86_400, bucket: 'HOUR' },
  { key: '30d', label: 'Last 30 days, per day', seconds: 30 * 86_400, bucket: 'DAY' },
];

// Two measures (docs/governance-model.md, "One measure of refusals"): units (readings, actions...), and
// requests (messages). Every refusal is one refused request, `limited`; a request refused on the per-message
// charge, before its body is decoded, carries no units, so the units chart alone would not show it.
interface Point {
  start: string;
  admitted: number;
  shed: number;
  rejected: number;
  admittedMessages: number;
  limited: number;
}

const POINT = '{ start admitted shed rejected admittedMessages limited }';

/** Every bucket of [from, to), zeros where nothing was recorded, so gaps read as "nothing happened". */
function zeroFilled(points: Point[], from: number, to: number, bucket: Bucket) {
  const step = BUCKET_SECONDS[bucket];
  const byStart = new Map(points.map((point) => [Math.floor(Date.parse(point.start) / 1000), point]));
  const times: number[] = [];
  const admitted: number[] = [];
  const shed: number[] = [];
  const rejected: number[] = [];
  const admittedRequests: number[] = [];
  const refusedRequests: number[] = [];
  for (let start = Math.floor(from / step) * step; start < to; start += step) {
    const point = byStart.get(start);
    times.push(start);
    admitted.push(point?.admitted ?? 0);
    shed.push(point?.shed ?? 0);
    rejected.push(point?.rejected ?? 0);
    admittedRequests.push(point?.admittedMessages ?? 0);
    refusedRequests.push(point?.limited ?? 0);
  }
  return { times, admitted, shed, rejected, admittedRequests, refusedRequests };
}

export function Trends({ viewer, params }: { viewer: Viewer; params: URLSearchParams }) {
  const tenantId = params.get('tenant') ?? viewer.tenantId ?? '';
  const dimension = params.get('dimension') ?? 'INGEST';
  const allowance = params.get('allowance') ?? '';
  const preset = PRESETS.find((each) => each.key === params.get('range')) ?? PRESETS[0]!;
  const [now, setNow] = useState(() => Math.floor(Date.now() / 1000));
  const from = now - preset.seconds;
  const to = now + 1;
  const range = { from: new Date(from * 1000).toISOString(), to: new Date(to * 1000).toISOString() };
  const [draftTenant, setDraftTenant] = useState(tenantId);
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params);
    for (const [key, value] of Object.entries(changes)) next.set(key, value);
    go(`/trends?${next}`);
  };

  const catalog = useLoad(() => gql<{ dimensions: Array<{ dimension: string; allowances: string[] }> }>('{ dimensions { dimension allowances } }'), []);
  const allowances = catalog.data?.dimensions.find((each) => each.dimension === dimension)?.allowances ?? [];

  const trend = useLoad(async () => {
    if (!tenantId) return undefined;
    const perAllowance = allowances.map((each, index) => `a${index}: shedTrend(tenantId: $tenantId, dimension: $dimension, from: $from, to: $to, bucket: $bucket, allowance: ${each}) ${POINT}`);
    return gql<Record<string, Point[]>>(
      `query ($tenantId: ID!, $dimension: Dimension!, $from: DateTime!, $to: DateTime!, $bucket: TrendBucket!${allowance ? ', $allowance: Allowance' : ''}) {
        total: shedTrend(tenantId: $tenantId, dimension: $dimension, from: $from, to: $to, bucket: $bucket${allowance ? ', allowance: $allowance' : ''}) ${POINT}
        ${perAllowance.join('\n')}
      }`,
      { tenantId, dimension, bucket: preset.bucket, ...range, ...(allowance ? { allowance } : {}) },
    );
  }, [tenantId, dimension, allowance, preset.key, now, allowances.join()]);

  // Live: a summary that refused something for this tenant refreshes the open chart at once (at most once a
  // second, through the sheds subscription); admitted-only traffic, which the subscription does not carry (it
  // would publish every summary of every tenant), is caught by reading the trend again every few seconds while
  // the page is visible.
  useEffect(() => {
    if (!tenantId) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const close = subscribe('subscription ($tenantId: ID!) { sheds(tenantId: $tenantId) { at } }', { tenantId }, () => {
      timer ??= setTimeout(() => {
        timer = undefined;
        setNow(Math.floor(Date.now() / 1000));
      }, 1000);
    });
    const poll = setInterval(() => {
      if (document.visibilityState === 'visible') setNow(Math.floor(Date.now() / 1000));
    }, LIVE_POLL_MS);
    return () => {
      close();
      clearInterval(poll);
      if (timer) clearTimeout(timer);
    };
  }, [tenantId]);

  const filled = useMemo(() => zeroFilled(trend.data?.total ?? [], from, to, preset.bucket), [trend.data, from, to, preset.bucket]);
  const totals = (points: Point[] = []) =>
    points.reduce(
      (sum, point) => ({ admitted: sum.admitted + point.admitted, shed: sum.shed + point.shed, rejected: sum.rejected + point.rejected, refused: sum.refused + point.limited }),
      { admitted: 0, shed: 0, rejected: 0, refused: 0 },
    );

  return (
    <section aria-labelledby="trends-title">
      <h1 id="trends-title">Trends</h1>
      <form
        class="row"
        onSubmit={(event) => {
          event.preventDefault();
          set({ tenant: draftTenant });
        }}
      >
        <label for="trend-tenant">Tenant</label>
        <input id="trend-tenant" value={draftTenant} disabled={!seesEveryTenant(viewer)} onInput={(event) => setDraftTenant(event.currentTarget.value)} />
        <button type="submit" disabled={!seesEveryTenant(viewer)}>
          Show
        </button>
        <label for="trend-dimension">Dimension</label>
        <select id="trend-dimension" value={dimension} onChange={(event) => set({ dimension: event.currentTarget.value, allowance: '' })}>
          {DIMENSIONS.filter((each) => each !== 'UNDELIVERED_COMMANDS').map((each) => (
            <option value={each}>{each}</option>
          ))}
        </select>
        <label for="trend-allowance">Allowance</label>
        <select id="trend-allowance" value={allowance} onChange={(event) => set({ allowance: event.currentTarget.value })}>
          <option value="">all allowances</option>
          {allowances.map((each) => (
            <option value={each}>{each}</option>
          ))}
        </select>
        <label for="trend-range">Range</label>
        <select id="trend-range" value={preset.key} onChange={(event) => set({ range: event.currentTarget.value })}>
          {PRESETS.map((each) => (
            <option value={each.key}>{each.label}</option>
          ))}
        </select>
      </form>
      {trend.error && <p role="alert" class="error">{trend.error}</p>}
      {!tenantId && <p>Choose a tenant.</p>}
      {tenantId && (
        <>
          <TimeChart
            title={`${tenantId} · ${dimension}${allowance ? ` · ${allowance}` : ''}: units per ${preset.bucket.toLowerCase()}`}
            times={filled.times}
            series={[
              { label: 'admitted units', values: filled.admitted, color: '#1a7f37' },
              { label: 'shed units', values: filled.shed, color: '#b35900' },
              { label: 'rejected units', values: filled.rejected, color: '#c4141b' },
            ]}
          />
          <TimeChart
            title={`${tenantId} · ${dimension}${allowance ? ` · ${allowance}` : ''}: requests per ${preset.bucket.toLowerCase()} (refused: every 429 or drop, also those refused before their units were counted)`}
            times={filled.times}
            series={[
              { label: 'admitted requests', values: filled.admittedRequests, color: '#1a7f37' },
              { label: 'refused requests', values: filled.refusedRequests, color: '#c4141b' },
            ]}
          />
          <div class="scroll" tabIndex={0}>
            <table data-testid="allowance-totals">
              <caption>By allowance over the range</caption>
              <thead>
                <tr>
                  <th scope="col">Allowance</th>
                  <th scope="col">Admitted units</th>
                  <th scope="col">Shed units</th>
                  <th scope="col">Rejected units</th>
                  <th scope="col">Refused requests</th>
                </tr>
              </thead>
              <tbody>
                {allowances.map((each, index) => {
                  const sum = totals(trend.data?.[`a${index}`]);
                  return (
                    <tr>
                      <th scope="row">{each}</th>
                      <td>{sum.admitted.toLocaleString('en')}</td>
                      <td>{sum.shed.toLocaleString('en')}</td>
                      <td>{sum.rejected.toLocaleString('en')}</td>
                      <td>{sum.refused.toLocaleString('en')}</td>
                    </tr>
                  );
                })}
                <tr>
                  <th scope="row">all</th>
                  {(() => {
                    const sum = totals(trend.data?.total);
                    return (
                      <>
                        <td data-testid="total-admitted">{sum.admitted.toLocaleString('en')}</td>
                        <td data-testid="total-shed">{sum.shed.toLocaleString('en')}</td>
                        <td data-testid="total-rejected">{sum.rejected.toLocaleString('en')}</td>
                        <td data-testid="total-refused">{sum.refused.toLocaleString('en')}</td>
                      </>
                    );
                  })()}
                </tr>
              </tbody>
            </table>
          </div>
        </>
      )}
      {seesEveryTenant(viewer) && <TopShedders dimension={dimension} from={range.from} to={range.to} />}
      {seesEveryTenant(viewer) && <Unresolved from={range.from} to={range.to} />}
    </section>
  );
}

function TopShedders({ dimension, from, to }: { dimension: string; from: string; to: string }) {
  const loaded = useLoad(
    () => gql<{ topShedders: Array<{ tenantId: string; limited: number; limitedUnits: number; shed: number; rejected: number; hits: number }> }>(
      'query ($dimension: Dimension, $from: DateTime!, $to: DateTime!) { topShedders(dimension: $dimension, from: $from, to: $to, first: 10) { tenantId limited limitedUnits shed rejected hits } }',
      { dimension, from, to },
    ),
    [dimension, from, to],
  );
  return (
    <>
      <h2>Top shedders over the range, by refused requests</h2>
      {loaded.error && <p role="alert" class="error">{loaded.error}</p>}
      <div class="scroll" tabIndex={0}>
        <table data-testid="top-shedders">
          <thead>
            <tr>
              <th scope="col">Tenant</th>
              <th scope="col">Refused requests</th>
              <th scope="col">Refused units</th>
              <th scope="col">Shed units</th>
              <th scope="col">Rejected units</th>
              <th scope="col">Seconds at the limit</th>
            </tr>
          </thead>
          <tbody>
            {loaded.data?.topShedders.map((row) => (
              <tr>
                <th scope="row">
                  <a href={`#/trends?tenant=${encodeURIComponent(row.tenantId)}&dimension=${dimension}`}>{row.tenantId}</a>
                </th>
                <td>{row.limited.toLocaleString('en')}</td>
                <td>{row.limitedUnits.toLocaleString('en')}</td>
                <td>{row.shed.toLocaleString('en')}</td>
                <td>{row.rejected.toLocaleString('en')}</td>
                <td>{row.hits.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {loaded.data?.topShedders.length === 0 && <p data-testid="no-shedders">None: no tenant was refused anything in this range.</p>}
    </>
  );
}

function Unresolved({ from, to }: { from: string; to: string }) {
  const loaded = useLoad(
    () => gql<{ unresolvedAdmissions: Array<{ dimension: string; cause: string; count: number; messages: number }> }>(
      'query ($from: DateTime!, $to: DateTime!) { unresolvedAdmissions(from: $from, to: $to) { dimension cause count messages } }',
      { from, to },
    ),
    [from, to],
  );
  return (
    <>
      <h2>Admitted at the platform default, by cause</h2>
      {loaded.data?.unresolvedAdmissions.length === 0 && <p>None: every admission in the range knew its tenant's limits.</p>}
      <ul class="plain">
        {loaded.data?.unresolvedAdmissions.map((row) => (
          <li>
            {row.dimension}, {row.cause}: {row.count.toLocaleString('en')} units in {row.messages.toLocaleString('en')} messages
          </li>
        ))}
      </ul>
    </>
  );
}
