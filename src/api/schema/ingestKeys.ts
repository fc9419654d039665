// Ingest keys (X-Device-Key of the HTTP front door) through the API, so they can be issued while the service
// runs on embedded storage, where the CLI is refused. A key is returned once, when it is issued; listings
// show only a prefix of its hash. Operators manage every tenant's keys, a TENANT_ADMIN its own tenant's; a
// key is only issued for a tenant the ledger has registered.
import { builder } from '../builder.ts';
import { tenantIsRegistered } from '../../control-plane/index.ts';
import {
  describeIngestKey,
  listIngestKeys,
  registerIngestCredential,
  revokeIngestKeyById,
  type CredentialKind,
  type IngestKeyListing,
} from '../../auth/index.ts';
import { Forbidden, InvalidInput, UnknownIngestKey, UnknownTenant } from './errorClasses.ts';

const IngestKeyKindEnum = builder.enumType('IngestKeyKind', {
  description: 'TENANT: any device of the tenant; DEVICE: one device on /v1/ingest; INTEGRATION: one integration on /v1/integrations.',
  values: ['TENANT', 'DEVICE', 'INTEGRATION'] as const,
});

const IngestKeyType = builder.objectRef<IngestKeyListing>('IngestKey').implement({
  description: 'An ingest key as stored: never the key itself, which only its issuer saw once.',
  fields: (t) => ({
    keyId: t.exposeString('keyId', { description: 'The first 12 hex digits of the key’s SHA-256; names the key in revokeIngestKey.' }),
    tenantId: t.exposeID('tenantId'),
    kind: t.field({ type: IngestKeyKindEnum, resolve: (key) => key.kind.toUpperCase() as 'TENANT' | 'DEVICE' | 'INTEGRATION' }),
    subject: t.exposeString('subject', { nullable: true, description: 'The device ID or integration name; null for a TENANT key.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
    lastUsedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the front door last looked the key up; it keeps verified keys in memory for 30 s, so this is refreshed at most that often.',
      resolve: (key) => key.lastUsedAt,
    }),
    revokedAt: t.field({ type: 'DateTime', nullable: true, resolve: (key) => key.revokedAt }),
  }),
});

interface Issued {
  key: string;
  ingestKey: IngestKeyListing;
}

const IngestKeyIssuedType = builder.objectRef<Issued>('IngestKeyIssued').implement({
  description: 'The key, shown this once (only its hash is stored): send it as X-Device-Key.',
  fields: (t) => ({ key: t.exposeString('key'), ingestKey: t.field({ type: IngestKeyType, resolve: (issued) => issued.ingestKey }) }),
});

const IngestKeyRevokedType = builder.objectRef<{ ingestKey: IngestKeyListing }>('IngestKeyRevoked').implement({
  description: 'The key is refused from now on (within the front door’s 30 s cache of verified keys); revoking it again changes nothing.',
  fields: (t) => ({ ingestKey: t.field({ type: IngestKeyType, resolve: (revoked) => revoked.ingestKey }) }),
});

const IssueIngestKeyInput = builder.inputType('IssueIngestKeyInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    deviceId: t.id({ description: 'A key for this device only.' }),
    integration: t.string({ description: 'A key for this integration only. Neither deviceId nor integration: a key for any device of the tenant.' }),
  }),
});

const RevokeIngestKeyInput = builder.inputType('RevokeIngestKeyInput', {
  fields: (t) => ({ tenantId: t.id({ required: true }), keyId: t.string({ required: true, description: 'From ingestKeys or IngestKeyIssued.' }) }),
});

builder.queryFields((t) => ({
  ingestKeys: t.field({
    type: [IngestKeyType],
    description: 'A tenant’s ingest keys, revoked ones included, newest first (OPERATOR, or the tenant’s TENANT_ADMIN).',
    args: { tenantId: t.arg.id({ required: true }) },
    authScopes: (_root, { tenantId }) => ({ manageIngestKeys: tenantId }),
    resolve: (_root, { tenantId }, { db }) => listIngestKeys(db, tenantId),
  }),
}));

builder.mutationFields((t) => ({
  issueIngestKey: t.field({
    type: IngestKeyIssuedType,
    description: 'Issues an ingest key for a registered tenant and returns it once (OPERATOR, or the tenant’s TENANT_ADMIN).',
    args: { input: t.arg({ type: IssueIngestKeyInput, required: true }) },
    authScopes: (_root, { input }) => ({ manageIngestKeys: input.tenantId }),
    errors: { types: [Forbidden, InvalidInput, UnknownTenant], directResult: true, union: { name: 'IssueIngestKeyPayload' } },
    resolve: async (_root, { input }, { db, store }) => {
      if (input.deviceId && input.integration) throw new InvalidInput('give deviceId or integration, not both', 'integration');
      if (!(await tenantIsRegistered(store, input.tenantId))) {
        throw new UnknownTenant(`no tenant ${input.tenantId} is registered: register it before issuing its keys`, 'tenantId');
      }
      const kind: CredentialKind = input.deviceId ? 'device' : input.integration ? 'integration' : 'tenant';
      const result = await registerIngestCredential(db, { tenantId: input.tenantId, kind, subject: input.deviceId ?? input.integration ?? null });
      if (result.status === 'invalid') throw new InvalidInput(result.message, result.field === 'subject' ? (input.deviceId ? 'deviceId' : 'integration') : result.field);
      return { key: result.key, ingestKey: (await describeIngestKey(db, result.key))! };
    },
  }),
  revokeIngestKey: t.field({
    type: IngestKeyRevokedType,
    description: 'Revokes one of a tenant’s ingest keys by keyId (OPERATOR, or the tenant’s TENANT_ADMIN).',
    args: { input: t.arg({ type: RevokeIngestKeyInput, required: true }) },
    authScopes: (_root, { input }) => ({ manageIngestKeys: input.tenantId }),
    errors: { types: [Forbidden, UnknownIngestKey], directResult: true, union: { name: 'RevokeIngestKeyPayload' } },
    resolve: async (_root, { input }, { db }) => {
      const result = await revokeIngestKeyById(db, input.tenantId, input.keyId.trim().toLowerCase());
      if (result.status === 'unknown') throw new UnknownIngestKey(`tenant ${input.tenantId} has no ingest key ${input.keyId}`, 'keyId');
      return { ingestKey: result.key };
    },
  }),
}));
