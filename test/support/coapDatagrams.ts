// CoAP datagrams written and read byte by byte (RFC 7252 section 3), for tests that send what a client
// library would not: blocks of uploads never finished, Resets, pings, datagrams that are not CoAP. A UDP
// socket of the test's own sends them and collects what comes back.
import { createSocket, type Socket } from 'node:dgram';

export const OPTION = { observe: 6, uriPath: 11, contentFormat: 12, maxAge: 14, uriQuery: 15, block1: 27, size1: 60 } as const;
export const TYPE = { con: 0, non: 1, ack: 2, rst: 3 } as const;

export interface Datagram {
  type: number;
  code: string;
  messageId: number;
  token: Buffer;
  options: { number: number; value: Buffer }[];
  payload: Buffer;
}

/** A request or empty message: options are sorted by number and delta-encoded. */
export function encodeDatagram(message: { type: number; code: string; messageId: number; token?: Buffer; options?: { number: number; value: Buffer }[]; payload?: Buffer }): Buffer {
  const token = message.token ?? Buffer.alloc(0);
  const [codeClass = 0, codeDetail = 0] = message.code.split('.').map(Number);
  const parts: Buffer[] = [Buffer.from([(1 << 6) | (message.type << 4) | token.length, (codeClass << 5) | codeDetail, message.messageId >> 8, message.messageId & 0xff]), token];
  let previous = 0;
  for (const option of [...(message.options ?? [])].sort((a, b) => a.number - b.number)) {
    const delta = option.number - previous;
    previous = option.number;
    const [deltaNibble, deltaExtra] = nibble(delta);
    const [lengthNibble, lengthExtra] = nibble(option.value.length);
    parts.push(Buffer.from([(deltaNibble << 4) | lengthNibble]), deltaExtra, lengthExtra, option.value);
  }
  if (message.payload && message.payload.length > 0) parts.push(Buffer.from([0xff]), message.payload);
  return Buffer.concat(parts);
}

function nibble(value: number): [number, Buffer] {
  if (value < 13) return [value, Buffer.alloc(0)];
  if (value < 269) return [13, Buffer.from([value - 13])];
  return [14, Buffer.from([(value - 269) >> 8, (value - 269) & 0xff])];
}

export function decodeDatagram(bytes: Buffer): Datagram {
  const tokenLength = bytes[0]! & 0x0f;
  const codeByte = bytes[1]!;
  let position = 4 + tokenLength;
  const options: Datagram['options'] = [];
  let number = 0;
  while (position < bytes.length && bytes[position] !== 0xff) {
    const head = bytes[position++]!;
    const read = (nibbleValue: number) => {
      if (nibbleValue === 13) return bytes[position++]! + 13;
      if (nibbleValue === 14) {
        const value = bytes.readUInt16BE(position) + 269;
        position += 2;
        return value;
      }
      return nibbleValue;
    };
    number += read(head >> 4);
    const length = read(head & 0x0f);
    options.push({ number, value: bytes.subarray(position, position + length) });
    position += length;
  }
  return {
    type: (bytes[0]! >> 4) & 3,
    code: `${codeByte >> 5}.${String(codeByte & 0x1f).padStart(2, '0')}`,
    messageId: bytes.readUInt16BE(2),
    token: bytes.subarray(4, 4 + tokenLength),
    options,
    payload: position < bytes.length ? bytes.subarray(position + 1) : Buffer.alloc(0),
  };
}

export function uintOption(value: number): Buffer {
  if (value === 0) return Buffer.alloc(0);
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from(bytes);
}

export function optionUint(datagram: Datagram, number: number): number | undefined {
  const option = datagram.options.find((each) => each.number === number);
  if (!option) return undefined;
  let value = 0;
  for (const byte of option.value) value = value * 256 + byte;
  return value;
}

/** A Block1 option value: num, more, size exponent. */
export function block1(num: number, more: boolean, szx = 6): Buffer {
  return uintOption((num << 4) | (more ? 8 : 0) | szx);
}

/** A POST to /dp with the given query, SenML JSON, as one datagram. */
export function sendRequest(options: { messageId: number; token?: Buffer; query?: string[]; block?: Buffer; size1?: number; payload?: Buffer; code?: string; observe?: boolean; path?: string[] }): Buffer {
  const list: { number: number; value: Buffer }[] = (options.path ?? ['dp']).map((segment) => ({ number: OPTION.uriPath, value: Buffer.from(segment) }));
  list.push({ number: OPTION.contentFormat, value: uintOption(110) });
  for (const each of options.query ?? []) list.push({ number: OPTION.uriQuery, value: Buffer.from(each) });
  if (options.block) list.push({ number: OPTION.block1, value: options.block });
  if (options.size1 !== undefined) list.push({ number: OPTION.size1, value: uintOption(options.size1) });
  if (options.observe) list.push({ number: OPTION.observe, value: Buffer.alloc(0) });
  return encodeDatagram({ type: TYPE.con, code: options.code ?? '0.02', messageId: options.messageId, token: options.token ?? Buffer.from([1, 2, 3, 4]), options: list, ...(options.payload ? { payload: options.payload } : {}) });
}

/** A socket of its own on 127.0.0.1 that sends datagrams to `port` and waits for what comes back. */
export class RawCoapPeer {
  private readonly received: Datagram[] = [];
  private waiters: (() => void)[] = [];
  private nextMessageId = Math.floor(Math.random() * 0xffff);

  private constructor(
    private readonly socket: Socket,
    private readonly port: number,
  ) {
    socket.on('message', (bytes: Buffer) => {
      this.received.push(decodeDatagram(bytes));
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  static async open(port: number): Promise<RawCoapPeer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    return new RawCoapPeer(socket, port);
  }

  messageId(): number {
    this.nextMessageId = (this.nextMessageId + 1) & 0xffff;
    return this.nextMessageId;
  }

  /** The address answers to this peer go to. */
  address(): { address: string; port: number; family: string } {
    return { address: '127.0.0.1', port: this.socket.address().port, family: 'IPv4' };
  }

  send(bytes: Buffer): void {
    this.socket.send(bytes, this.port, '127.0.0.1');
  }

  /** The next datagram answering `messageId`, or undefined after `timeoutMs`. */
  async answer(messageId: number, timeoutMs = 5_000): Promise<Datagram | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.received.findIndex((each) => each.messageId === messageId);
      if (index >= 0) return this.received.splice(index, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Sends a request and waits for its answer (an ACK with the same message ID). */
  async exchange(build: (messageId: number) => Buffer, timeoutMs?: number): Promise<Datagram | undefined> {
    const messageId = this.messageId();
    this.send(build(messageId));
    return this.answer(messageId, timeoutMs);
  }

  close(): void {
    this.socket.close();
  }
}
