// The inbound-integrations body: one uplink object, or an array of N uplinks that costs N
// (docs/governance-model.md, Allowances). An uplink is passed on as the integration sent it (LoRaWAN network
// server, webhook); only its shape is checked.
import { isObject, parseJson } from '../pipeline/readings.ts';

export type DecodedUplinks =
  | { status: 'decoded'; uplinks: readonly Record<string, unknown>[] }
  | { status: 'invalid'; message: string };

export function decodeUplinks(body: Buffer): DecodedUplinks {
  const parsed = parseJson(body);
  if (parsed.status === 'invalid') return parsed;
  const document = parsed.value;
  if (isObject(document)) return { status: 'decoded', uplinks: [document] };
  if (!Array.isArray(document)) return { status: 'invalid', message: 'the body must be an uplink object or an array of them' };
  for (let i = 0; i < document.length; i++) {
    if (!isObject(document[i])) return { status: 'invalid', message: `uplinks[${i}] is not an object` };
  }
  return { status: 'decoded', uplinks: document as Record<string, unknown>[] };
}
