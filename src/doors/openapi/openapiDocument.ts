// The OpenAPI 3.1 description of every HTTP route of the service, served at GET /openapi.json. A test
// (test/e2e/openapi.test.ts) holds it to the real routes: every route of the service is documented here, and
// every status documented here is produced by a request to the running service. A method a path does not
// list is answered 405 (with Allow) and is not listed per path.
import { ADMITTED_DIMENSIONS, MAX_AT_AGE_MS, MAX_AT_AHEAD_MS, MAX_CALLER_KEY_LENGTH, MAX_UNITS } from '../admissions/admissionItem.ts';
import { MAX_BATCH_BYTES, MAX_BATCH_ITEMS } from '../admissions/admissionRoutes.ts';
import { LEASE_SUMMARY_MAX_SECONDS } from '../leases/leaseSummary.ts';
import { ALLOWANCES } from '../../governance/index.ts';

export const OPENAPI_PATH = '/openapi.json';

const json = (schema: object) => ({ 'application/json': { schema } });
const errorBody = { $ref: '#/components/schemas/Error' };
const answer = (description: string, schema: object = errorBody, headers?: object) => ({
  description,
  content: json(schema),
  ...(headers ? { headers } : {}),
});
const bearer = [{ bearer: [] }];
const tenantParam = { name: 'tenant', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$' } };

const rateLimitHeaders = {
  'Retry-After': { description: 'Whole seconds, at least 1.', schema: { type: 'integer', minimum: 1 } },
  'X-RateLimit-Scope': { schema: { type: 'string', enum: ['ip', 'tenant'] } },
  'X-RateLimit-Limit': { description: 'The per-second limit that decided.', schema: { type: 'number' } },
  'RateLimit-Policy': { description: 'draft-ietf-httpapi-ratelimit-headers: `"tenant-readings";q=5;w=1`', schema: { type: 'string' } },
  RateLimit: { description: '`"tenant-readings";r=0;t=1`', schema: { type: 'string' } },
};

// An admitted answer says what each charge left, so a client can slow down before it is refused.
const quotaHeaders = {
  'RateLimit-Policy': {
    description: 'One item per limit charged (ingest: messages and readings; integrations: uplinks): `"tenant-messages";q=5;w=1, "tenant-readings";q=5;w=1`',
    schema: { type: 'string' },
  },
  RateLimit: { description: 'r: what is left; t: whole seconds until the bucket is full again: `"tenant-messages";r=4;t=1, "tenant-readings";r=2;t=1`', schema: { type: 'string' } },
};

const ingestAnswers = {
  '202': answer(
    'Admitted and handed to the sink (integrations: over the limit, dropped and counted).',
    {
      type: 'object',
      properties: { accepted: { type: 'integer' }, dropped: { type: 'integer' }, requestId: { type: 'string' } },
      required: ['accepted'],
    },
    quotaHeaders,
  ),
  '400': answer('The body is not a valid batch of readings.'),
  '401': answer('X-Device-Key is missing, unknown, revoked or not valid for this path.'),
  '404': answer('The path names no possible tenant (or integration).'),
  '413': answer(
    'The body is larger than INGEST_MAX_BODY_BYTES, or it carries more readings (uplinks) than the tenant\'s burst: a request that could never be admitted, so it is not told to retry; the body names `units` and `burst`. Counted as rejected.',
    { type: 'object', properties: { error: { type: 'string' }, units: { type: 'integer' }, burst: { type: 'integer' }, requestId: { type: 'string' } }, required: ['error'] },
  ),
  '429': answer('Over the edge per-IP limit or the tenant limit (the 429 contract).', errorBody, rateLimitHeaders),
  '503': answer('The sink did not take the readings; retry.'),
};

const batchAnswers = (ok: object) => ({
  '200': ok,
  '400': answer('The body is not JSON, not a batch, empty, or longer than the item limit.'),
  '401': answer('No valid bearer token.'),
  '403': answer('The token names a role other than SERVICE or OPERATOR.'),
  '413': answer(`The body is larger than ${MAX_BATCH_BYTES} bytes.`),
});

const itemError = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { field: { type: 'string', description: 'The field at fault (empty: the item as a whole).' }, reason: { type: 'string' } },
      required: ['field', 'reason'],
    },
  },
  required: ['error'],
};

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'governance-ledger',
    version: '0.1.0',
    description:
      'Per-tenant limits and their enforcement. The GraphQL API at /graphql is described by schema/schema.graphql; ' +
      "Envoy's rate limit service (gRPC) by proto/envoy/service/ratelimit/v3/rls.proto.",
  },
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      deviceKey: { type: 'apiKey', in: 'header', name: 'X-Device-Key' },
    },
    schemas: {
      Error: { type: 'object', properties: { error: { type: 'string' }, requestId: { type: 'string' } }, required: ['error'] },
      AdmissionItem: {
        type: 'object',
        required: ['tenantId', 'dimension', 'units'],
        properties: {
          tenantId: { type: 'string' },
          dimension: { type: 'string', enum: ADMITTED_DIMENSIONS },
          allowance: { type: ['string', 'null'], enum: [...ALLOWANCES, null], description: 'Required for INGEST and EGRESS, absent for the others.' },
          units: { type: 'integer', minimum: 0, maximum: MAX_UNITS },
          at: {
            oneOf: [{ type: 'number', description: 'Unix milliseconds' }, { type: 'string', format: 'date-time' }],
            description:
              `The instant to meter at (EGRESS: when the triggering telemetry arrived); default: when the batch arrived. ` +
              `At most ${MAX_AT_AHEAD_MS / 1000} s ahead and ${MAX_AT_AGE_MS / 86_400_000} days back.`,
          },
          callerKey: { type: 'string', maxLength: MAX_CALLER_KEY_LENGTH, description: 'The caller hashed for STABLE_DOWNSAMPLE.' },
          charge: { type: 'string', enum: ['readings', 'message'], default: 'readings' },
        },
      },
      AdmissionDecision: {
        type: 'object',
        required: ['admitted', 'behaviour', 'limit', 'remaining', 'retryAfterSeconds', 'burst', 'neverFits', 'scope', 'source'],
        properties: {
          admitted: { type: 'boolean' },
          burst: { type: 'number', description: 'The most one request can ever be granted: the burst (a fixed window: its limit).' },
          neverFits: { type: 'boolean', description: 'Refused because units exceed burst: no retry admits it (counted as rejected).' },
          behaviour: { type: 'string', enum: ['ADMIT', 'SHED', 'REJECT', 'STABLE_DOWNSAMPLE', 'DROP_ACCEPTED'] },
          limit: { type: 'number' },
          remaining: { type: 'number' },
          retryAfterSeconds: { type: 'number' },
          scope: { type: 'string', enum: ['tenant', 'overflow'] },
          source: { type: 'string', enum: ['TENANT_OVERRIDE', 'TIER', 'PLATFORM_DEFAULT', 'SHIPPED_DEFAULT'] },
        },
      },
      ItemError: itemError,
      InferenceUsage: {
        type: 'object',
        required: ['tenantId', 'inputTokens', 'outputTokens'],
        properties: { tenantId: { type: 'string' }, inputTokens: { type: 'integer', minimum: 0 }, outputTokens: { type: 'integer', minimum: 0 } },
      },
    },
  },
  paths: {
    '/healthz': { get: { summary: 'The process answers.', responses: { '200': answer('Alive.', { type: 'object' }) } } },
    '/readyz': {
      get: {
        summary: 'The database answers and no projection lags more than 30 s.',
        responses: { '200': answer('Ready.', { type: 'object' }), '503': answer('Not ready, with the reasons.', { type: 'object' }) },
      },
    },
    '/metrics': {
      get: {
        summary: 'Prometheus text format.',
        security: [{}, { bearer: [] }],
        responses: {
          '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': { description: 'GOVERNANCE_METRICS_TOKEN is set and the request does not carry it.', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      },
    },
    '/graphql': {
      post: {
        summary: 'The GraphQL API (schema/schema.graphql).',
        security: bearer,
        requestBody: { required: true, content: json({ type: 'object', properties: { query: { type: 'string' }, variables: { type: 'object' } } }) },
        responses: { '200': answer('A GraphQL response.', { type: 'object' }), '401': answer('No valid bearer token.', { type: 'object' }) },
      },
    },
    '/v1/ingest/{tenant}': {
      parameters: [tenantParam],
      post: {
        summary: 'Readings from devices (HTTP ingest front door).',
        security: [{ deviceKey: [] }],
        requestBody: { required: true, content: json({ type: 'object', properties: { readings: { type: 'array', items: { type: 'object' } } }, required: ['readings'] }) },
        responses: ingestAnswers,
      },
      options: { summary: 'CORS preflight.', responses: { '204': { description: 'Allowed methods and headers.' } } },
    },
    '/v1/integrations/{tenant}/{integration}': {
      parameters: [tenantParam, { ...tenantParam, name: 'integration' }],
      post: {
        summary: 'Uplinks from an integration (one object or an array).',
        security: [{ deviceKey: [] }],
        requestBody: { required: true, content: json({ oneOf: [{ type: 'object' }, { type: 'array', items: { type: 'object' } }] }) },
        responses: ingestAnswers,
      },
      options: { summary: 'CORS preflight.', responses: { '204': { description: 'Allowed methods and headers.' } } },
    },
    '/v1/admissions': {
      post: {
        summary: `Admission decisions for up to ${MAX_BATCH_ITEMS} items, in order; a bad item gets its own error.`,
        description:
          'Every item is decided by the service\'s Governor and counted in the ledger (shedTrend, topShedders, /metrics). ' +
          'Limits are the tenant\'s configuration; nothing in an item can raise them.',
        security: bearer,
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['items'],
            properties: { items: { type: 'array', minItems: 1, maxItems: MAX_BATCH_ITEMS, items: { $ref: '#/components/schemas/AdmissionItem' } } },
          }),
        },
        responses: batchAnswers(
          answer('One decision (or item error) per item, in order.', {
            type: 'object',
            required: ['decisions'],
            properties: {
              decisions: { type: 'array', items: { oneOf: [{ $ref: '#/components/schemas/AdmissionDecision' }, { $ref: '#/components/schemas/ItemError' }] } },
            },
          }),
        ),
      },
    },
    '/v1/inference-usage': {
      post: {
        summary: 'Provider tokens of AI inference: instance-wide counters and per-tenant spend in the ledger.',
        security: bearer,
        requestBody: {
          required: true,
          content: json({
            oneOf: [
              { $ref: '#/components/schemas/InferenceUsage' },
              {
                type: 'object',
                required: ['items'],
                properties: { items: { type: 'array', minItems: 1, maxItems: MAX_BATCH_ITEMS, items: { $ref: '#/components/schemas/InferenceUsage' } } },
              },
            ],
          }),
        },
        responses: batchAnswers(
          answer('One result per item, in order.', {
            type: 'object',
            required: ['results'],
            properties: {
              results: {
                type: 'array',
                items: { oneOf: [{ type: 'object', properties: { recorded: { const: true } }, required: ['recorded'] }, { $ref: '#/components/schemas/ItemError' }] },
              },
            },
          }),
        ),
      },
    },
    '/v1/leases': {
      post: {
        summary: 'The leasing client\'s exchange (packages/client): slices of tenants\' budgets out, summaries of its decisions in.',
        description:
          'Summaries go to the same Recorder as the Governor\'s own tallies, each checked first (src/doors/leases/README.md: 1 to 60 s within one minute, ' +
          'at most 7 days back and 60 s ahead, whole counts within their maxima); one out of bounds is refused alone and nothing of it is recorded. ' +
          'A summary with an id is recorded once however often it is sent. 503 (Retry-After: 1) when they could not be recorded; the client sends them again.',
        security: bearer,
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            properties: {
              leases: { type: 'array', maxItems: MAX_BATCH_ITEMS, items: { type: 'object', required: ['tenantId', 'dimension', 'want'] } },
              summaries: {
                type: 'array',
                maxItems: MAX_BATCH_ITEMS,
                items: {
                  type: 'object',
                  required: ['tenantId', 'dimension', 'fromSecond', 'seconds', 'admittedUnits', 'admittedCount', 'refusedUnits', 'refusedCount', 'hitSeconds'],
                  properties: {
                    id: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$', description: 'Recorded once however often it is sent.' },
                    tenantId: { type: 'string' },
                    dimension: { type: 'string' },
                    allowance: { type: ['string', 'null'] },
                    fromSecond: { type: 'integer' },
                    seconds: { type: 'integer', minimum: 1, maximum: LEASE_SUMMARY_MAX_SECONDS },
                    admittedUnits: { type: 'integer', minimum: 0, description: 'At most (seconds + 1) x 1,000,000.' },
                    admittedCount: { type: 'integer', minimum: 0 },
                    refusedUnits: { type: 'integer', minimum: 0 },
                    refusedCount: { type: 'integer', minimum: 0 },
                    hitSeconds: { type: 'integer', minimum: 0 },
                  },
                },
              },
            },
          }),
        },
        responses: {
          '200': answer('One grant per lease and one outcome per summary, in order.', {
            type: 'object',
            required: ['grants', 'summaries'],
            properties: {
              grants: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    granted: { type: 'integer' },
                    limit: { type: 'number' },
                    validForMs: { type: 'integer' },
                    error: { $ref: '#/components/schemas/ItemError/properties/error' },
                  },
                },
              },
              summaries: {
                type: 'array',
                items: {
                  oneOf: [
                    { type: 'object', required: ['recorded'], properties: { recorded: { const: true } } },
                    { $ref: '#/components/schemas/ItemError' },
                  ],
                },
              },
            },
          }),
          '400': answer('The body is not JSON or not an exchange.'),
          '401': answer('No valid bearer token.'),
          '403': answer('The token names a role other than SERVICE or OPERATOR.'),
          '413': answer('The body is larger than 1 MiB.'),
        },
      },
    },
    '/console/': {
      get: { summary: 'The operator console (static files).', responses: { '200': { description: 'The console page.', content: { 'text/html': { schema: { type: 'string' } } } } } },
    },
    '/favicon.ico': {
      get: { summary: "The service's icon (SVG).", responses: { '200': { description: 'The icon.', content: { 'image/svg+xml': { schema: { type: 'string' } } } } } },
    },
    [OPENAPI_PATH]: { get: { summary: 'This document.', responses: { '200': answer('OpenAPI 3.1.', { type: 'object' }) } } },
  } as Record<string, Record<string, unknown>>,
};
