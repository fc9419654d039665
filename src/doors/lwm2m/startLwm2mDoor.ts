// Starts the LwM2M door: a UDP socket of its own on GOVERNANCE_LWM2M_PORT (bound exclusively, so a second
// service on the same port fails at start instead of splitting datagrams) served by the coap package.
import { createSocket, type Socket } from 'node:dgram';
import { createServer as createCoapServer } from 'coap';
import type { Logger } from '../../logger.ts';
import type { DoorParts } from '../pipeline/index.ts';
import { createLwm2mHandler, type Lwm2mDropReason } from './lwm2mDoor.ts';
import { Registrations } from './registrations.ts';

export interface Lwm2mDoorParts {
  port: number;
  host: string;
  parts: DoorParts;
  logger: Logger;
  maxPayloadBytes: number;
  onDropped?: (reason: Lwm2mDropReason) => void;
}

export interface Lwm2mDoor {
  /** The UDP port it listens on (the one asked for, or the one given for port 0). */
  port: number;
  registrations: Registrations;
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
  const handle = createLwm2mHandler({
    parts: parts.parts,
    logger: parts.logger,
    registrations,
    maxPayloadBytes: parts.maxPayloadBytes,
    onDropped: parts.onDropped,
  });
  const server = createCoapServer({ type });
  server.on('request', (req, res) => void handle(req, res));
  // A socket fault is logged; the service goes on (a datagram cannot be half-read).
  server.on('error', (error: Error) => parts.logger.warn({ err: error }, 'LwM2M endpoint error'));
  server.listen(socket);
  const port = socket.address().port;
  parts.logger.info({ port }, 'LwM2M endpoint listening');
  return {
    port,
    registrations,
    async close() {
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
