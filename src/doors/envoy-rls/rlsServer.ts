// The gRPC listener of Envoy's rate limit service (@grpc/grpc-js), on GOVERNANCE_GRPC_PORT (default 8081).
// With GOVERNANCE_GRPC_TLS_CERT and _KEY it speaks TLS; with GOVERNANCE_GRPC_TLS_CLIENT_CA as well, only
// clients presenting a certificate signed by that CA get an answer (mutual TLS, as a mesh's sidecars do).
//
// Closed by default: a ShouldRateLimit call charges a tenant's limits and is recorded in the ledger, so an
// anonymous caller must not reach it. Without client certificates (GOVERNANCE_GRPC_TLS_CLIENT_CA) the port
// listens on 127.0.0.1 only, whatever HOST says, unless GOVERNANCE_GRPC_TOKEN is set: then it listens on HOST
// and every call must carry the token in its metadata, `authorization: Bearer <token>` (UNAUTHENTICATED
// otherwise, nothing decided or recorded). With client certificates the token, when set, is required as well.
// A request is at most MAX_REQUEST_BYTES on the wire, so decoding one is bounded before any of it is read.
//
// Envoy fails open on an error, so only a request that cannot be decided is one (INVALID_ARGUMENT); a fault
// of ours is INTERNAL and logged, never a thrown exception that ends the process.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Logger } from '../../logger.ts';
import { packagePath } from '../../packageRoot.ts';
import { MalformedRateLimitRequest, type RateLimitRequestMessage } from './descriptorMapping.ts';
import type { RateLimitDecider, RateLimitResponseMessage } from './rateLimitService.ts';

export const RLS_PROTO_FILE = 'envoy/service/ratelimit/v3/rls.proto';

/** Field names as in the .proto, enums as names, absent fields left undefined (proto3: unset is the default). */
export const RLS_LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true };

export function loadRlsService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(RLS_PROTO_FILE, { ...RLS_LOADER_OPTIONS, includeDirs: [packagePath('proto')] });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  return loaded.envoy.service.ratelimit.v3.RateLimitService.service;
}

export interface GrpcTlsFiles {
  certFile: string;
  keyFile: string;
  /** Require and verify client certificates signed by this CA. */
  clientCaFile?: string;
}

export interface RlsServerOptions {
  decider: RateLimitDecider;
  port: number;
  /** Where to listen when callers are authenticated (client certificates or a token); else 127.0.0.1. */
  host: string;
  tls?: GrpcTlsFiles;
  /** GOVERNANCE_GRPC_TOKEN: required in every call's metadata as `authorization: Bearer <token>`. */
  token?: string;
  logger: Logger;
}

export interface RlsServer {
  port: number;
  /** The address it listens on (127.0.0.1 unless callers are authenticated). */
  host: string;
  close(): Promise<void>;
}

/** The metadata key of the token (gRPC metadata keys are lower case). */
export const RLS_TOKEN_METADATA_KEY = 'authorization';
/** The largest request accepted on the wire: a gateway's requests are a few hundred bytes. */
export const MAX_REQUEST_BYTES = 64 * 1024;
const LOOPBACK = '127.0.0.1';

/** Where the port may listen: HOST only when callers prove who they are (client certificates or the token). */
export function rlsListenHost(host: string, tls: GrpcTlsFiles | undefined, token: string | undefined): string {
  return tls?.clientCaFile !== undefined || token !== undefined ? host : LOOPBACK;
}

/**
 * Checks `authorization: Bearer <token>` in constant time: both sides are hashed to 32 bytes first, so neither
 * the comparison's time nor its length check tells anything about the token.
 */
function tokenCheck(token: string): (metadata: grpc.Metadata) => boolean {
  const expected = createHash('sha256').update(token, 'utf8').digest();
  return (metadata) => {
    const values = metadata.get(RLS_TOKEN_METADATA_KEY);
    if (values.length !== 1 || typeof values[0] !== 'string') return false;
    const match = /^Bearer (.+)$/.exec(values[0]);
    const offered = createHash('sha256').update(match?.[1] ?? '', 'utf8').digest();
    return timingSafeEqual(offered, expected) && match !== null;
  };
}

export async function serverCredentials(tls: GrpcTlsFiles | undefined): Promise<grpc.ServerCredentials> {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  const [cert, key, clientCa] = await Promise.all([
    readFile(tls.certFile),
    readFile(tls.keyFile),
    tls.clientCaFile === undefined ? Promise.resolve(null) : readFile(tls.clientCaFile),
  ]);
  return grpc.ServerCredentials.createSsl(clientCa, [{ cert_chain: cert, private_key: key }], clientCa !== null);
}

export async function startRlsServer(options: RlsServerOptions): Promise<RlsServer> {
  const { decider, logger } = options;
  const authorized = options.token === undefined ? null : tokenCheck(options.token);
  const host = rlsListenHost(options.host, options.tls, options.token);
  if (host !== options.host) {
    logger.warn({ host, requested: options.host }, 'the rate limit service listens on 127.0.0.1 only: set GOVERNANCE_GRPC_TOKEN or client certificates to open it');
  }
  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
  server.addService(loadRlsService(), {
    ShouldRateLimit(
      call: grpc.ServerUnaryCall<RateLimitRequestMessage, RateLimitResponseMessage>,
      callback: grpc.sendUnaryData<RateLimitResponseMessage>,
    ) {
      if (authorized !== null && !authorized(call.metadata)) {
        callback({ code: grpc.status.UNAUTHENTICATED, details: `a valid token is required in the ${RLS_TOKEN_METADATA_KEY} metadata: Bearer <token>` });
        return;
      }
      let response: RateLimitResponseMessage;
      try {
        response = decider.shouldRateLimit(call.request);
      } catch (error) {
        if (error instanceof MalformedRateLimitRequest) {
          callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
          return;
        }
        logger.error({ err: error }, 'ShouldRateLimit failed');
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
        return;
      }
      callback(null, response);
    },
  });
  const credentials = await serverCredentials(options.tls);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${options.port}`, credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  return {
    port,
    host,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls under way get a moment to finish; then the rest are cut.
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2_000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
