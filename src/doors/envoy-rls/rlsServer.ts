// The gRPC listener of Envoy's rate limit service (@grpc/grpc-js), on GOVERNANCE_GRPC_PORT (default 8081).
// With GOVERNANCE_GRPC_TLS_CERT and _KEY it speaks TLS; with GOVERNANCE_GRPC_TLS_CLIENT_CA as well, only
// clients presenting a certificate signed by that CA get an answer (mutual TLS, as a mesh's sidecars do).
//
// Envoy fails open on an error, so only a request that cannot be decided is one (INVALID_ARGUMENT); a fault
// of ours is INTERNAL and logged, never a thrown exception that ends the process.
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
  host: string;
  tls?: GrpcTlsFiles;
  logger: Logger;
}

export interface RlsServer {
  port: number;
  close(): Promise<void>;
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
  const server = new grpc.Server();
  server.addService(loadRlsService(), {
    ShouldRateLimit(
      call: grpc.ServerUnaryCall<RateLimitRequestMessage, RateLimitResponseMessage>,
      callback: grpc.sendUnaryData<RateLimitResponseMessage>,
    ) {
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
    server.bindAsync(`${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`, credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  return {
    port,
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
