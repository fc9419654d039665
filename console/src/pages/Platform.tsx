import { useState } from 'preact/hooks';
import { canEdit, describePayload, DIMENSIONS, formatLimit, gql, mutate, type LimitValue, type Viewer } from '../api.ts';
import { useLoad } from '../hooks.ts';
import { LimitPreview } from '../limitPreview.tsx';

interface PlatformData {
  dimensions: Array<{
    dimension: string;
    unit: string;
    overLimitByAllowance: Array<{ allowance: string | null; overLimit: string; answer: string }>;
    shippedDefault: LimitValue;
  }>;
  platformDefaults: Array<{ dimension: string; value: LimitValue | null; shadow: LimitValue | null }>;
  tiers: Array<{ id: string; name: string; limits: Array<{ dimension: string; value: LimitValue }>; shadowLimits: Array<{ dimension: string; value: LimitValue }> }>;
}

const VALUE = '{ ratePerSecond burst ceiling }';
const PLATFORM = `{
  dimensions { dimension unit overLimitByAllowance { allowance overLimit answer } shippedDefault ${VALUE} }
  platformDefaults { dimension value ${VALUE} shadow ${VALUE} }
  tiers { id name limits { dimension value ${VALUE} } shadowLimits { dimension value ${VALUE} } }
}`;

export function Platform({ viewer }: { viewer: Viewer }) {
  const loaded = useLoad(() => gql<PlatformData>(PLATFORM), []);
  const data = loaded.data;
  return (
    <section aria-labelledby="platform-title">
      <h1 id="platform-title">Platform</h1>
      {loaded.error && <p role="alert" class="error">{loaded.error}</p>}
      <h2>Platform defaults</h2>
      <div class="scroll" tabIndex={0}>
        <table>
          <caption>What a tenant gets when neither an override nor its tier sets a dimension</caption>
          <thead>
            <tr>
              <th scope="col">Dimension</th>
              <th scope="col">Counts</th>
              <th scope="col">Over the limit</th>
              <th scope="col">Platform default</th>
              <th scope="col">Shadow (not enforced)</th>
              <th scope="col">Shipped default</th>
            </tr>
          </thead>
          <tbody>
            {data?.dimensions.map((dimension) => {
              const platformDefault = data.platformDefaults.find((each) => each.dimension === dimension.dimension);
              const platform = platformDefault?.value;
              return (
              <tr data-dimension={dimension.dimension}>
                <th scope="row">{dimension.dimension}</th>
                <td>{dimension.unit}</td>
                <td>
                  {/* Per allowance: INGEST sheds on MQTT but HTTP ingest answers 429, and the page says which. */}
                  <ul class="plain">
                    {dimension.overLimitByAllowance.map((each) => (
                      <li>
                        {each.allowance ? <strong>{each.allowance}</strong> : null}
                        {each.allowance ? ': ' : ''}
                        {each.overLimit} <span class="muted">({each.answer})</span>
                      </li>
                    ))}
                  </ul>
                </td>
                <td>{platform ? formatLimit(platform) : 'not set'}</td>
                <td class="shadow">
                  {platformDefault?.shadow ? (
                    <>
                      {formatLimit(platformDefault.shadow)} <span class="badge">shadow</span>
                    </>
                  ) : (
                    '–'
                  )}
                </td>
                <td>{formatLimit(dimension.shippedDefault)}</td>
              </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {canEdit(viewer) && <LimitForm title="Set a platform default" name="setPlatformDefault" inputType="SetPlatformDefaultInput" onSaved={loaded.reload} />}
      <h2>Tiers</h2>
      {data?.tiers.length === 0 && <p>No tier is defined yet.</p>}
      {data?.tiers.map((tier) => (
        <div class="card" data-tier={tier.id}>
          <h3>
            {tier.name} <code>{tier.id}</code>
          </h3>
          <ul class="plain">
            {tier.limits.map((limit) => (
              <li>
                {limit.dimension}: {formatLimit(limit.value)}
              </li>
            ))}
            {tier.shadowLimits.map((limit) => (
              <li class="shadow">
                {limit.dimension}: {formatLimit(limit.value)} <span class="badge">shadow, not enforced</span>
              </li>
            ))}
            {tier.limits.length === 0 && <li>Sets no dimension: its tenants get the platform defaults.</li>}
          </ul>
        </div>
      ))}
      {canEdit(viewer) && <DefineTier onSaved={loaded.reload} />}
      {canEdit(viewer) && data && data.tiers.length > 0 && (
        <LimitForm title="Set a tier limit" name="setTierLimit" inputType="SetTierLimitInput" tiers={data.tiers} onSaved={loaded.reload} />
      )}
    </section>
  );
}

function DefineTier({ onSaved }: { onSaved(): void }) {
  const [tierId, setTierId] = useState('');
  const [name, setName] = useState('');
  const [message, setMessage] = useState<string>();
  async function save(event: Event) {
    event.preventDefault();
    const payload = await mutate('defineTier', { tierId, name }, 'DefineTierInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }
  return (
    <form class="card" onSubmit={save} aria-labelledby="define-tier-title">
      <h2 id="define-tier-title">Define a tier</h2>
      <label for="tier-id">Tier id</label>
      <input id="tier-id" required value={tierId} onInput={(event) => setTierId(event.currentTarget.value)} />
      <label for="tier-name">Name</label>
      <input id="tier-name" required value={name} onInput={(event) => setName(event.currentTarget.value)} />
      <button type="submit">Define tier</button>
      {message && <p role="status">{message}</p>}
    </form>
  );
}

function LimitForm({ title, name, inputType, tiers, onSaved }: { title: string; name: string; inputType: string; tiers?: Array<{ id: string; name: string }>; onSaved(): void }) {
  const id = name.toLowerCase();
  const [tierId, setTierId] = useState(tiers?.[0]?.id ?? '');
  const [dimension, setDimension] = useState('INGEST');
  const [value, setValue] = useState('');
  const [burst, setBurst] = useState('');
  const [reason, setReason] = useState('');
  const [mode, setMode] = useState('ENFORCE');
  const [message, setMessage] = useState<string>();
  const isCeiling = dimension === 'UNDELIVERED_COMMANDS';
  const hasBurst = !isCeiling && dimension !== 'API_REQUESTS';
  const limit = () => (isCeiling ? { ceiling: Number(value) } : { ratePerSecond: Number(value), ...(hasBurst && burst ? { burst: Number(burst) } : {}) });
  async function save(event: Event) {
    event.preventDefault();
    const input = {
      ...(tiers ? { tierId } : {}),
      dimension,
      ...limit(),
      ...(!isCeiling && mode === 'SHADOW' ? { mode } : {}),
      ...(reason ? { reason } : {}),
    };
    const payload = await mutate(name, input, inputType);
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }
  async function promote() {
    const payload = await mutate('promoteShadowLimit', { ...(tiers ? { tierId } : { platform: true }), dimension, ...(reason ? { reason } : {}) }, 'PromoteShadowLimitInput');
    setMessage(describePayload(payload));
    if (payload.__typename === 'Applied') onSaved();
  }
  return (
    <form class="card" onSubmit={save} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {tiers && (
        <>
          <label for={`${id}-tier`}>Tier</label>
          <select id={`${id}-tier`} value={tierId} onChange={(event) => setTierId(event.currentTarget.value)}>
            {tiers.map((tier) => (
              <option value={tier.id}>{tier.name}</option>
            ))}
          </select>
        </>
      )}
      <label for={`${id}-dimension`}>Dimension</label>
      <select id={`${id}-dimension`} value={dimension} onChange={(event) => setDimension(event.currentTarget.value)}>
        {DIMENSIONS.map((each) => (
          <option value={each}>{each}</option>
        ))}
      </select>
      <label for={`${id}-value`}>{isCeiling ? 'Ceiling (commands)' : 'Rate per second'}</label>
      <input id={`${id}-value`} required inputMode="numeric" pattern="[0-9]*" value={value} onInput={(event) => setValue(event.currentTarget.value)} />
      {hasBurst && (
        <>
          <label for={`${id}-burst`}>Burst (optional)</label>
          <input id={`${id}-burst`} inputMode="numeric" pattern="[0-9]*" value={burst} onInput={(event) => setBurst(event.currentTarget.value)} />
        </>
      )}
      {!isCeiling && (
        <>
          <label for={`${id}-mode`}>Mode</label>
          <select id={`${id}-mode`} value={mode} onChange={(event) => setMode(event.currentTarget.value)}>
            <option value="ENFORCE">Enforce: refuse over it</option>
            <option value="SHADOW">Shadow: count what it would refuse, refuse nothing</option>
          </select>
        </>
      )}
      <label for={`${id}-reason`}>Reason</label>
      <input id={`${id}-reason`} value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      <div class="row">
        <button type="submit">Save</button>
        {!isCeiling && (
          <button type="button" onClick={promote}>
            Enforce the shadow limit
          </button>
        )}
      </div>
      {message && <p role="status">{message}</p>}
      {!isCeiling && (
        <LimitPreview
          id={id}
          change={() => {
            if (value.trim() === '') return 'Type a rate per second to preview what it would refuse.';
            if (tiers) return { tierLimit: { tierId, dimension, ...limit() } };
            return { platformDefault: { dimension, ...limit() } };
          }}
        />
      )}
    </form>
  );
}
