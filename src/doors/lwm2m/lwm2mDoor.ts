// The LwM2M door: a CoAP endpoint for LwM2M 1.1 registration and Send.
//
//   POST /rd?ep=<device>&lt=<lifetime s>&k=<key>   registration: the key is checked (4.01), 2.01 with Location-Path rd/<id>
//   POST /rd/<id>[?lt=<s>]  update;  DELETE /rd/<id>  de-registration (from the address that registered)
//   POST /dp[?k=<key>&ep=<device>]                   Send, SenML JSON (110) or SenML CBOR (112), whole or in
//                                                    Block1 blocks (each authenticated, kept in BlockUploads)
//
// Every request first passes the edge per-address limit (4.29). A Send, in the order of docs/governance-model.md: the device (its registration's address, or the key it carries; 4.01), one
// charge for the message before decoding on LWM2M (4.29), the size cap (4.13), the content format (4.15) and
// the decode (4.00), each record with a value charged as one reading on LWM2M (4.29), then the sink (2.04;
// 5.03 when it fails). 4.29 and 5.03 carry Max-Age, the seconds to wait before trying again. The key comes
// first because the tenant is the key's: LwM2M traffic is authenticated, so each tenant gets an allowance of
// its own (docs/governance-model.md). Keys are the ingest credentials X-Device-Key uses: a device key (for its own device) or
// a tenant key (naming the device in `ep`).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingMessage } from 'coap';
import type { Logger } from '../../logger.ts';
import {
  bodyCapOf,
  chargeMessage,
  chargeReadings,
  checkEdge,
  handToSink,
  isAcceptableName,
  type DoorParts,
  type DropReason,
  type Metering,
} from '../pipeline/index.ts';
import type { IngestCredential } from '../../auth/index.ts';
import type { Block1, BlockUploads } from './blockUploads.ts';
import { block1Of, block1Value } from './coapServer.ts';
import type { Registrations } from './registrations.ts';
import { decodeSenml, SENML_CBOR, SENML_JSON } from './senml.ts';

export type Lwm2mDropReason = Extract<DropReason, 'unauthorized' | 'too-large' | 'unsupported-format' | 'malformed'>;

export interface Lwm2mDoorOptions {
  parts: DoorParts;
  logger: Logger;
  registrations: Registrations;
  /** Block-wise Sends (Block1) in flight, bounded (blockUploads.ts). */
  uploads: BlockUploads;
  maxPayloadBytes: number;
  now?: () => number;
  onDropped?: (reason: Lwm2mDropReason) => void;
}

/** LwM2M's default registration lifetime when `lt` is not given. */
const DEFAULT_LIFETIME_SECONDS = 86_400;
const MAX_LIFETIME_SECONDS = 30 * 86_400;

export function createLwm2mHandler(options: Lwm2mDoorOptions): (req: IncomingMessage, res: OutgoingMessage) => Promise<void> {
  const { parts, logger, registrations, uploads, maxPayloadBytes } = options;
  const now = options.now ?? Date.now;

  const refuse = (res: OutgoingMessage, code: string, diagnostic: string, reason?: Lwm2mDropReason): void => {
    if (reason) options.onDropped?.(reason);
    res.code = code;
    res.end(diagnostic);
  };

  /** 4.13 with Size1, the largest payload taken (RFC 7959 2.9.3), so a client knows what would fit. */
  const tooLarge = (res: OutgoingMessage, maxBytes: number): void => {
    res.setOption('Size1', maxBytes);
    refuse(res, '4.13', `the payload is larger than ${maxBytes} bytes`, 'too-large');
  };

  async function deviceOf(key: string | undefined, ep: string | undefined): Promise<{ tenantId: string; deviceId: string } | string> {
    if (!key) return 'no key: register first, or send k=<key>';
    const credential: IngestCredential | null = await parts.findCredential(key);
    if (!credential) return 'the key is not known';
    if (credential.kind === 'device') {
      if (ep !== undefined && ep !== credential.subject) return 'the key belongs to another device';
      return { tenantId: credential.tenantId, deviceId: credential.subject! };
    }
    if (credential.kind === 'tenant') {
      if (ep === undefined || !isAcceptableName(ep)) return 'a tenant key needs the device in ep';
      return { tenantId: credential.tenantId, deviceId: ep };
    }
    return 'an integration key cannot send device readings';
  }

  async function register(res: OutgoingMessage, query: URLSearchParams, address: string, atMs: number) {
    const ep = query.get('ep') ?? undefined;
    if (ep === undefined || !isAcceptableName(ep)) return refuse(res, '4.00', 'ep (the endpoint client name, the device ID) is required');
    const lifetime = lifetimeOf(query.get('lt'));
    if (lifetime === null) return refuse(res, '4.00', `lt must be whole seconds from 1 to ${MAX_LIFETIME_SECONDS}`);
    const device = await deviceOf(query.get('k') ?? undefined, ep);
    if (typeof device === 'string') return refuse(res, '4.01', device, 'unauthorized');
    const registration = registrations.register(address, device.tenantId, device.deviceId, lifetime ?? DEFAULT_LIFETIME_SECONDS, atMs);
    res.code = '2.01';
    res.setOption('Location-Path', [Buffer.from('rd'), Buffer.from(registration.id)]);
    res.end();
  }

  async function send(req: IncomingMessage, res: OutgoingMessage, query: URLSearchParams, address: string, atMs: number, block: Block1 | undefined) {
    const key = query.get('k') ?? undefined;
    const registered = key === undefined ? registrations.at(address, atMs) : undefined;
    // Every block of a block-wise Send proves its sender too (the key is cached after the first), so no
    // unknown peer can park bytes in the uploads.
    const device = registered ?? (await deviceOf(key, query.get('ep') ?? undefined));
    if (typeof device === 'string') return refuse(res, '4.01', device, 'unauthorized');
    const { tenantId, deviceId } = device;
    // The cap follows the sink's (NATS: its max_payload less the envelope), read per request.
    const capBytes = bodyCapOf(parts, maxPayloadBytes);

    let payload = req.payload;
    if (block) {
      // Refused before a byte is held: a declared size past the cap (Size1, RFC 7959 4), a format Send never takes.
      const declaredBytes = req.headers['Size1'];
      if (typeof declaredBytes === 'number' && declaredBytes > capBytes) return tooLarge(res, capBytes);
      if (!isSenml(req)) return refuse(res, '4.15', 'Send takes SenML JSON (110) or SenML CBOR (112)', 'unsupported-format');
      const taken = uploads.take(req.rsinfo.address, address, 'dp', block, req.payload, atMs);
      switch (taken.status) {
        case 'continue':
          res.setOption('Block1', block1Value(block));
          return endWith(res, '2.31');
        case 'too-large':
          return tooLarge(res, capBytes);
        case 'incomplete':
          return refuse(res, '4.08', 'this block does not follow the last one received: start again from block 0');
        case 'bad-block':
          return refuse(res, '4.00', taken.message);
        case 'busy':
          logger.debug({ address, reason: taken.reason }, 'LwM2M block-wise Send refused: too many uploads in flight');
          res.setOption('Max-Age', taken.retryAfterSeconds);
          return refuse(res, '5.03', 'too many block-wise uploads in flight; retry after Max-Age seconds');
        case 'complete':
          payload = taken.payload;
          res.setOption('Block1', block1Value(block));
          break;
      }
    }

    const metering: Metering = { tenantId, allowance: 'LWM2M', atMs, clientKey: address.slice(0, address.lastIndexOf(':')) };
    const message = chargeMessage(parts, metering);
    if (!message.admitted) return tooMany(res, message.retryAfterSeconds);

    if (payload.length > capBytes) return tooLarge(res, capBytes);
    const format = contentFormatOf(req.headers['Content-Format']);
    if (format !== SENML_JSON && format !== SENML_CBOR) {
      return refuse(res, '4.15', 'Send takes SenML JSON (110) or SenML CBOR (112)', 'unsupported-format');
    }
    const decoded = decodeSenml(payload, format, deviceId, atMs);
    if (decoded.status === 'invalid') return refuse(res, '4.00', decoded.message, 'malformed');

    const readings = chargeReadings(parts, metering, decoded.readingCount);
    if (!readings.admitted && readings.neverFits) {
      // More readings than the allowance ever holds: no wait admits them, so not 4.29 with a Max-Age (the
      // Governor counts it as rejected; it is not a door drop).
      return refuse(res, '4.13', `${decoded.readingCount} readings can never be admitted at once: the LWM2M burst is ${Math.floor(readings.burst)}`);
    }
    if (!readings.admitted) return tooMany(res, readings.retryAfterSeconds);
    if (decoded.readingCount > 0) {
      const sunk = await handToSink(parts, {
          tenantId,
          route: 'lwm2m',
          allowance: 'LWM2M',
          credential: { kind: 'device', subject: deviceId },
          requestId: randomUUID(),
          receivedAtMs: atMs,
          units: decoded.readingCount,
          items: decoded.value as unknown as Record<string, unknown>[],
      });
      if (sunk.status === 'unavailable') {
        logger.error({ err: sunk.error, tenantId }, 'the reading sink failed; the LwM2M Send is answered 5.03');
        res.setOption('Max-Age', 1);
        return refuse(res, '5.03', 'the reading pipeline is unavailable; retry');
      }
      // Refused for its content (too large for the sink, not serialisable): no retry can change it.
      if (sunk.status === 'refused') return refuse(res, sunk.reason === 'too-large' ? '4.13' : '4.00', sunk.message);
    }
    res.code = '2.04';
    res.end();
  }

  return async (req, res) => {
    const atMs = now();
    const address = `${req.rsinfo.address}:${req.rsinfo.port}`;
    // Step 1, the edge limit on the client's address, before anything is known of the tenant.
    const edge = checkEdge(parts, req.rsinfo.address, atMs);
    if (!edge.admitted) return tooMany(res, edge.retryAfterSeconds);
    const [pathPart = '', queryPart = ''] = req.url.split('?', 2);
    const path = pathPart.replace(/^\/+|\/+$/g, '').split('/');
    const query = new URLSearchParams(queryPart);
    const block = block1Of(req);
    if (block && 'invalid' in block) return refuse(res, '4.02', block.invalid);
    try {
      if (path.length === 1 && path[0] === 'dp') {
        if (req.method !== 'POST') return refuse(res, '4.05', 'Send is POST /dp');
        return await send(req, res, query, address, atMs, block);
      }
      if (path[0] === 'rd' && path.length === 1) {
        if (req.method !== 'POST') return refuse(res, '4.05', 'register with POST /rd');
        if (block) {
          // A registration's payload (its object links) is not read, so its blocks are not kept: each one
          // before the last is acknowledged, and the last registers.
          res.setOption('Block1', block1Value(block));
          if (block.more) return endWith(res, '2.31');
        }
        return await register(res, query, address, atMs);
      }
      if (path[0] === 'rd' && path.length === 2) {
        if (req.method === 'DELETE') return registrations.deregister(path[1]!, address) ? endWith(res, '2.02') : refuse(res, '4.04', 'no such registration');
        if (req.method !== 'POST') return refuse(res, '4.05', 'update with POST, de-register with DELETE');
        const lifetime = lifetimeOf(query.get('lt'));
        if (lifetime === null) return refuse(res, '4.00', `lt must be whole seconds from 1 to ${MAX_LIFETIME_SECONDS}`);
        return registrations.update(path[1]!, address, lifetime, atMs) ? endWith(res, '2.04') : refuse(res, '4.04', 'no such registration');
      }
      return refuse(res, '4.04', 'this endpoint serves /rd and /dp');
    } catch (error) {
      logger.error({ err: error, path: pathPart.slice(0, 100) }, 'LwM2M request failed');
      return refuse(res, '5.00', 'internal error');
    }
  };
}

function tooMany(res: OutgoingMessage, retryAfterSeconds: number): void {
  res.code = '4.29';
  res.setOption('Max-Age', Math.max(1, retryAfterSeconds));
  res.end('over the tenant’s LWM2M allowance; retry after Max-Age seconds');
}

function isSenml(req: IncomingMessage): boolean {
  const format = contentFormatOf(req.headers['Content-Format']);
  return format === SENML_JSON || format === SENML_CBOR;
}

function endWith(res: OutgoingMessage, code: string): void {
  res.code = code;
  res.end();
}

/** undefined when absent, null when present and not a lifetime. */
function lifetimeOf(text: string | null): number | undefined | null {
  if (text === null) return undefined;
  const value = Number(text);
  return Number.isInteger(value) && value >= 1 && value <= MAX_LIFETIME_SECONDS ? value : null;
}

const FORMAT_NUMBERS: Record<string, number> = { 'application/senml+json': SENML_JSON, 'application/senml+cbor': SENML_CBOR };

function contentFormatOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return FORMAT_NUMBERS[value] ?? (/^\d+$/.test(value) ? Number(value) : undefined);
  return undefined;
}
