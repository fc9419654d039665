// The coap package's server, with what RFC 7252 and RFC 7959 ask of an endpoint that the package does not do,
// or does in a way a hostile client can use (issue 34):
// - a Reset (RST) is never answered; it only stops the retransmission of a response of ours it names (4.3).
//   The package took an RST for a request (its check reads `ack ?? reset`, and `ack` is false) and answered 4.04;
// - an empty Confirmable message is a ping, answered with a Reset (4.3); an empty Non-confirmable is ignored;
// - Block1 uploads are not buffered by the package (which kept every block of every token for 247 s, without a
//   bound): the option is taken off the request and handed to the door (`block1Of`), which authenticates the
//   sender and keeps the blocks in its bounded BlockUploads;
// - Observe is taken off: the door serves no observable resource, and a server that does not observe answers
//   the request as if the option were not there (RFC 7641 3.1), so a GET gets 4.05 or 4.04, not a 2.05
//   notification stream;
// - an error answered by the package (5.00 for a request it could not handle) says only "internal error", the
//   detail goes to the log; a datagram that is not CoAP gets a Reset when it is Confirmable (4.2), else nothing.
import type { AddressInfo } from 'node:net';
import { Server, type CoapPacket, type CoapServerOptions, type IncomingMessage } from 'coap';
import type { Block1 } from './blockUploads.ts';

/** What the door is told of a request's Block1 option. */
export type Block1Option = Block1 | { invalid: string };

const block1s = new WeakMap<object, Block1Option>();

/** The Block1 option the request carried (taken off by the server), if any. */
export function block1Of(req: IncomingMessage): Block1Option | undefined {
  return block1s.get(req._packet);
}

/** The Block1 option as a response echoes it (RFC 7959 2.3): num, M and SZX in at most 3 bytes. */
export function block1Value(block: Block1): Buffer {
  const value = (block.num << 4) | (block.more ? 8 : 0) | block.szx;
  if (value < 0x100) return Buffer.from([value]);
  if (value < 0x10000) return Buffer.from([value >> 8, value & 0xff]);
  return Buffer.from([value >> 16, (value >> 8) & 0xff, value & 0xff]);
}

export interface Lwm2mCoapServerOptions extends CoapServerOptions {
  /** Told of a request the package could not handle, or a datagram that is not CoAP, with the detail. */
  onFault: (kind: 'unparseable' | 'failed', detail: string, rsinfo: AddressInfo) => void;
}

const TYPE_CON = 0;
const TYPE_NON = 1;
const TYPE_ACK = 2;
const TYPE_RST = 3;

export class Lwm2mCoapServer extends Server {
  private readonly onFault: Lwm2mCoapServerOptions['onFault'];
  /** The datagram being handled, so a Reset can name the message ID of one the package could not parse. */
  private datagram: Buffer | undefined;

  constructor(options: Lwm2mCoapServerOptions) {
    const { onFault, ...serverOptions } = options;
    super(serverOptions);
    this.onFault = onFault;
  }

  override handleRequest(): (msg: Buffer, rsinfo: AddressInfo) => void {
    const handle = super.handleRequest();
    return (msg, rsinfo) => {
      // The package parses and handles a datagram in the same turn (its middlewares are synchronous).
      this.datagram = msg;
      try {
        handle(msg, rsinfo);
      } finally {
        this.datagram = undefined;
      }
    };
  }

  override _handle(packet: CoapPacket, rsinfo: AddressInfo): void {
    if (packet.reset === true) {
      // Never answered. If it names a response of ours still being retransmitted (a separate Confirmable
      // response), that retransmission stops: dropping the entry resets its sender.
      this._lru.delete(this._toKey({ rsinfo } as IncomingMessage, packet, false));
      return;
    }
    if (packet.ack !== true && (packet.code === '0.00' || packet.code === undefined)) {
      if (packet.confirmable === true && packet.messageId !== undefined) this.sendReset(packet.messageId, rsinfo);
      return;
    }
    if (packet.ack !== true && packet.options) {
      const options = packet.options;
      const block1 = options.find((option) => option.name === 'Block1');
      if (block1) block1s.set(packet, parseBlock1(block1.value));
      packet.options = options.filter((option) => option.name !== 'Block1' && option.name !== 'Observe');
    }
    super._handle(packet, rsinfo);
  }

  override _sendError(payload: Buffer, rsinfo: AddressInfo, packet?: CoapPacket, code = '5.00'): void {
    const detail = payload.toString('utf8').slice(0, 200);
    if (!packet) {
      this.onFault('unparseable', detail, rsinfo);
      // RFC 7252 4.2: a Confirmable message that cannot be processed is rejected with a Reset, which needs
      // its message ID (bytes 2-3 of a datagram of CoAP version 1); anything else is ignored.
      const datagram = this.datagram;
      if (datagram && datagram.length >= 4 && datagram[0]! >> 6 === 1 && ((datagram[0]! >> 4) & 3) === TYPE_CON) {
        this.sendReset(datagram.readUInt16BE(2), rsinfo);
      }
      return;
    }
    // The package's own words for a 4.xx are about the request; a 5.00 carries whatever was thrown, which is
    // the service's business, not the client's.
    const internal = code.startsWith('5');
    if (internal) this.onFault('failed', detail, rsinfo);
    this.sendDatagram(answer(packet, code, internal ? 'internal error' : detail), rsinfo);
  }

  private sendReset(messageId: number, rsinfo: AddressInfo): void {
    const reset = Buffer.alloc(4);
    reset[0] = (1 << 6) | (TYPE_RST << 4);
    reset.writeUInt16BE(messageId, 2);
    this.sendDatagram(reset, rsinfo);
  }

  private sendDatagram(datagram: Buffer, rsinfo: AddressInfo): void {
    const socket = this._sock;
    // The package's own _sendError leaves the address out (so its errors went to localhost).
    if (socket && 'send' in socket) socket.send(datagram, rsinfo.port, rsinfo.address);
  }
}

function parseBlock1(value: Buffer): Block1Option {
  if (value.length > 3) return { invalid: `a Block1 option of ${value.length} bytes (at most 3)` };
  let number = 0;
  for (const byte of value) number = number * 256 + byte;
  return { num: number >> 4, more: (number & 8) !== 0, szx: number & 7 };
}

/**
 * A response with no options (RFC 7252 3): piggybacked on the ACK of a Confirmable request, else
 * Non-confirmable, with the request's token; the payload after the 0xFF marker.
 */
function answer(request: CoapPacket, code: string, diagnostic: string): Buffer {
  const token = request.token ?? Buffer.alloc(0);
  const [codeClass = 5, codeDetail = 0] = code.split('.').map(Number);
  const header = Buffer.alloc(4);
  header[0] = (1 << 6) | ((request.confirmable === true ? TYPE_ACK : TYPE_NON) << 4) | Math.min(token.length, 8);
  header[1] = (codeClass << 5) | codeDetail;
  header.writeUInt16BE((request.messageId ?? 0) & 0xffff, 2);
  const payload = Buffer.from(diagnostic, 'utf8');
  return Buffer.concat([header, token.subarray(0, 8), ...(payload.length > 0 ? [Buffer.from([0xff]), payload] : [])]);
}
