// Starts the LwM2M door: a UDP socket of its own on GOVERNANCE_LWM2M_PORT (bound exclusively, so a second
// service on the same port fails at start instead of splitting datagrams) served by the coap package's server,
// as coapServer.ts corrects it (Resets, pings, Observe, Block1, error texts).
import { createSocket, type Socket } from 'node:dgram';
import type { Logger } from '../../logger.ts';
import type { DoorParts } from '../pipeline/index.ts';
import { BlockUploads, type BlockUploadLimits } from './blockUploads.ts';
import { Lwm2mCoapServer } from './coapServer.ts';
import { createLwm2mHandler, type Lwm2mDropReason } from './lwm2mDoor.ts';
import { Registrations } from './registrations.ts';

export interface Lwm2mDoorParts {
  port: number;
  host: string;
  parts: DoorParts;
  logger: Logger;
  maxPayloadBytes: number;
  /** The bounds of block-wise Sends in flight (GOVERNANCE_LWM2M_UPLOADS_*; the payload cap is maxPayloadBytes). */
  uploadLimits: Omit<BlockUploadLimits, 'maxPayloadBytes'>;
  onDropped?: (reason: Lwm2mDropReason) => void;
}

/**
 * The coap package keeps every answer it sends for EXCHANGE_LIFETIME (247 s), so a retransmitted request is
 * answered again without being handled twice; it counts only the answer's bytes, while each entry keeps the
 * request it answers alive (its payload too), some 4.6 KB for a 1 KiB block. With its default 32 MiB, 120,000
 * unauthenticated 1 KiB requests grew the service by 800 MB (issue 34). 256 KiB holds some 5,000 answers of
 * 50 bytes (a few tens of MB at most); under a flood the oldest give way first, so a retransmission that comes
 * after its answer gave way is handled again.
 */
export const ANSWER_CACHE_BYTES = 256 * 1024;

export interface Lwm2mDoor {
  /** The UDP port it listens on (the one asked for, or the one given for port 0). */
  port: number;
  registrations: Registrations;
  uploads: BlockUploads;
  /** The answers the coap package keeps for retransmissions: how many, and their bytes as it counts them. */
  cachedAnswers(): { count: number; bytes: number };
  close(): Promise<void>;
}

export async function startLwm2mDoor(parts: Lwm2mDoorParts): Promise<Lwm2mDoor> {
  const type = parts.host.includes(':') ? 'udp6' : 'udp4';
  const socket: Socket = createSocket({ type, reuseAddr: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(parts.port, parts.host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const registrations = new Registrations();
  const uploads = new BlockUploads({ ...parts.uploadLimits, maxPayloadBytes: parts.maxPayloadBytes });
  // Idle uploads are dropped even when no block comes to notice them.
  const expiry = setInterval(() => uploads.expire(Date.now()), Math.max(1000, Math.floor(parts.uploadLimits.idleMs / 4)));
  expiry.unref();
  const handle = createLwm2mHandler({
    parts: parts.parts,
    logger: parts.logger,
    registrations,
    uploads,
    maxPayloadBytes: parts.maxPayloadBytes,
    onDropped: parts.onDropped,
  });
  const server = new Lwm2mCoapServer({
    type,
    cacheSize: ANSWER_CACHE_BYTES,
    onFault: (kind, detail, rsinfo) =>
      kind === 'unparseable'
        ? parts.logger.debug({ detail, address: rsinfo.address }, 'LwM2M datagram that is not CoAP ignored')
        : parts.logger.warn({ detail, address: rsinfo.address }, 'LwM2M request failed in the CoAP layer; answered 5.00'),
  });
  server.on('request', (req, res) => void handle(req, res));
  // A socket fault is logged; the service goes on (a datagram cannot be half-read).
  server.on('error', (error: Error) => parts.logger.warn({ err: error }, 'LwM2M endpoint error'));
  server.listen(socket);
  const port = socket.address().port;
  parts.logger.info({ port }, 'LwM2M endpoint listening');
  return {
    port,
    registrations,
    uploads,
    cachedAnswers: () => ({ count: server._lru.size, bytes: server._lru.calculatedSize }),
    async close() {
      clearInterval(expiry);
      uploads.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => {
        try {
          socket.close(() => resolve());
        } catch {
          resolve();
        }
      });
    },
  };
}
