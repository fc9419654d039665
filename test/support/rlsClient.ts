// A grpc-js client of Envoy's rate limit service built from the project's own .proto, as a gateway would be.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packagePath } from '../../src/packageRoot.ts';
import { RLS_LOADER_OPTIONS, RLS_PROTO_FILE } from '../../src/doors/envoy-rls/rlsServer.ts';

export interface RlsRequest {
  domain?: string;
  descriptors?: { entries?: { key?: string; value?: string }[]; limit?: { requests_per_unit: number; unit: string } }[];
  hits_addend?: number;
}

export interface RlsResponse {
  overall_code: string;
  statuses?: { code: string; current_limit?: { requests_per_unit: number; unit: string; name: string }; limit_remaining?: number; duration_until_reset?: { seconds: number } }[];
  response_headers_to_add?: { key: string; value: string }[];
}

const definition = protoLoader.loadSync(RLS_PROTO_FILE, { ...RLS_LOADER_OPTIONS, includeDirs: [packagePath('proto')] });
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
};
const methods = definition['envoy.service.ratelimit.v3.RateLimitService'] as unknown as Record<string, grpc.MethodDefinition<RlsRequest, RlsResponse>>;

export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

/** Encodes a request as the wire bytes a gateway sends. */
export function encodeRequest(request: RlsRequest): Buffer {
  return methods.ShouldRateLimit!.requestSerialize(request);
}

export function decodeResponse(bytes: Buffer): RlsResponse {
  return methods.ShouldRateLimit!.responseDeserialize(bytes);
}

export class RlsClient {
  readonly client: grpc.Client;

  constructor(address: string, credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure()) {
    this.client = new loaded.envoy.service.ratelimit.v3.RateLimitService(address, credentials);
  }

  /** `metadata`: sent with the call, e.g. `{ authorization: 'Bearer <token>' }`. */
  shouldRateLimit(request: RlsRequest, deadlineMs = 10_000, metadata: Record<string, string> = {}): Promise<RlsResponse> {
    const sent = new grpc.Metadata();
    for (const [key, value] of Object.entries(metadata)) sent.set(key, value);
    return new Promise((resolve, reject) => {
      (
        this.client as unknown as Record<
          string,
          (r: RlsRequest, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: RlsResponse) => void) => void
        >
      ).ShouldRateLimit!(
        request,
        sent,
        { deadline: Date.now() + deadlineMs },
        (error, response) => (error ? reject(error) : resolve(response)),
      );
    });
  }

  /** Sends raw request bytes (fields this project's .proto does not know, for one). */
  shouldRateLimitRaw(bytes: Buffer): Promise<RlsResponse> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        SHOULD_RATE_LIMIT_PATH,
        (buffer: Buffer) => buffer,
        decodeResponse,
        bytes,
        { deadline: Date.now() + 10_000 },
        (error, response) => (error ? reject(error) : resolve(response!)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
