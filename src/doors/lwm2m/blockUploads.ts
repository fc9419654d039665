// Block-wise uploads (CoAP Block1, RFC 7959) of LwM2M Sends, held until their last block: bounded in number per
// peer host and in all, in bytes (each upload by the payload cap, all of them together by a budget), and in
// time (an upload no block has reached for `idleMs` is dropped). The coap package would buffer every block
// of every token for its exchange lifetime (247 s), with no bound at all (issue 34: 40 x 3,000 blocks grew the
// service by 740 MB); the door takes the blocks itself (coapServer.ts) and keeps them here.
//
// An upload is known by its peer (address and port) and its resource, as RFC 7959 section 2.4 matches
// blocks (not by token: a client may change its token from block to block). Blocks must come in order:
// each one starts where the previous one ended (a client may make its blocks smaller on the way, never
// larger, so the offset `num * size` is what is checked); anything else is 4.08 Request Entity Incomplete.

export interface BlockUploadLimits {
  /** Uploads in flight from one host (IP address), whatever its ports. */
  perHost: number;
  /** Uploads in flight in all. */
  maxUploads: number;
  /** Bytes held by all uploads together. */
  maxBufferedBytes: number;
  /** The largest payload one upload may assemble to (the door's payload cap). */
  maxPayloadBytes: number;
  /** An upload with no block for this long is dropped, and its bytes freed. */
  idleMs: number;
}

/** A Block1 option: block number, more to come, size exponent (the block holds 2^(szx+4) bytes). */
export interface Block1 {
  num: number;
  more: boolean;
  szx: number;
}

export type BlockOutcome =
  /** Held: answer 2.31 Continue, echoing the Block1 option. */
  | { status: 'continue' }
  /** The last block: the whole payload. */
  | { status: 'complete'; payload: Buffer }
  /** Past `maxPayloadBytes`: 4.13, the upload is dropped. */
  | { status: 'too-large' }
  /** Over a bound in flight (per host, in all, bytes): 5.03 with Max-Age; nothing held for this block. */
  | { status: 'busy'; retryAfterSeconds: number; reason: string }
  /** A block that does not follow the one before (or no upload to follow): 4.08. */
  | { status: 'incomplete' }
  /** Not a block RFC 7959 allows (size exponent 7, a non-last block of the wrong size): 4.00. */
  | { status: 'bad-block'; message: string };

interface Upload {
  key: string;
  host: string;
  chunks: Buffer[];
  receivedBytes: number;
  lastBlockAtMs: number;
}

export interface BlockUploadStats {
  uploads: number;
  bufferedBytes: number;
  /** Uploads dropped for being idle since the start. */
  expired: number;
}

export class BlockUploads {
  // In order of their last block (an upload is re-inserted on each), so the idle ones are at the front.
  private readonly uploads = new Map<string, Upload>();
  private readonly perHost = new Map<string, number>();
  private bufferedBytes = 0;
  private expired = 0;

  constructor(private readonly limits: BlockUploadLimits) {}

  /**
   * Takes one block of the upload `resource` from `peer` (address:port) on `host` (its address). The caller
   * has authenticated the sender first, so only a proven device can hold bytes here.
   */
  take(host: string, peer: string, resource: string, block: Block1, payload: Buffer, nowMs: number): BlockOutcome {
    this.expire(nowMs);
    if (block.szx > 6) return { status: 'bad-block', message: 'block size exponent 7 is reserved' };
    const blockBytes = 2 ** (block.szx + 4);
    if (block.more && payload.length !== blockBytes) {
      return { status: 'bad-block', message: `a block with more to come holds exactly ${blockBytes} bytes, not ${payload.length}` };
    }
    if (!block.more && payload.length > blockBytes) return { status: 'bad-block', message: `a block of size ${blockBytes} holds ${payload.length} bytes` };
    const offset = block.num * blockBytes;
    const key = `${peer} ${resource}`;
    let upload = this.uploads.get(key);

    if (block.num === 0 && upload) {
      // A new upload of the same resource from the same peer replaces the one before (RFC 7959 2.5).
      this.remove(upload);
      upload = undefined;
    }
    if (offset + payload.length > this.limits.maxPayloadBytes) {
      if (upload) this.remove(upload);
      return { status: 'too-large' };
    }
    if (block.num === 0) {
      if (!block.more) return { status: 'complete', payload };
      if ((this.perHost.get(host) ?? 0) >= this.limits.perHost) return this.busy(`more than ${this.limits.perHost} uploads in flight from one address`, nowMs);
      if (this.uploads.size >= this.limits.maxUploads) return this.busy(`more than ${this.limits.maxUploads} uploads in flight`, nowMs);
      upload = { key, host, chunks: [], receivedBytes: 0, lastBlockAtMs: nowMs };
    } else if (!upload || upload.receivedBytes !== offset) {
      return { status: 'incomplete' };
    }
    if (this.bufferedBytes + payload.length > this.limits.maxBufferedBytes) {
      return this.busy(`uploads in flight hold ${this.limits.maxBufferedBytes} bytes`, nowMs);
    }

    if (!block.more) {
      this.remove(upload);
      return { status: 'complete', payload: Buffer.concat([...upload.chunks, payload]) };
    }
    if (block.num === 0) this.perHost.set(host, (this.perHost.get(host) ?? 0) + 1);
    // A copy: the datagram's buffer is not kept alive by a slice of it.
    upload.chunks.push(Buffer.from(payload));
    upload.receivedBytes += payload.length;
    upload.lastBlockAtMs = nowMs;
    this.bufferedBytes += payload.length;
    this.uploads.delete(key);
    this.uploads.set(key, upload);
    return { status: 'continue' };
  }

  /** Drops every upload whose last block is `idleMs` old or older. */
  expire(nowMs: number): void {
    for (const upload of this.uploads.values()) {
      if (nowMs - upload.lastBlockAtMs < this.limits.idleMs) break;
      this.remove(upload);
      this.expired++;
    }
  }

  stats(): BlockUploadStats {
    return { uploads: this.uploads.size, bufferedBytes: this.bufferedBytes, expired: this.expired };
  }

  clear(): void {
    for (const upload of [...this.uploads.values()]) this.remove(upload);
  }

  private busy(reason: string, nowMs: number): BlockOutcome {
    // Room comes back when the oldest upload ends or goes idle: its idle deadline is the longest wait.
    const oldest = this.uploads.values().next().value;
    const waitMs = oldest ? oldest.lastBlockAtMs + this.limits.idleMs - nowMs : 1000;
    return { status: 'busy', retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), reason };
  }

  private remove(upload: Upload): void {
    if (this.uploads.get(upload.key) !== upload) return;
    this.uploads.delete(upload.key);
    this.bufferedBytes -= upload.receivedBytes;
    const count = (this.perHost.get(upload.host) ?? 1) - 1;
    if (count > 0) this.perHost.set(upload.host, count);
    else this.perHost.delete(upload.host);
  }
}
