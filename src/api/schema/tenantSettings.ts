// What a tenant has chosen beside its limits: the API_REQUESTS over-limit policy, its AI model and its
// branding, the latter two resolved through their cascades. Model and branding are batched per request (one
// query each however many tenants a page holds), the policy comes with the tenant record itself.
import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import { resolveTenantBrandings, resolveTenantModels, type TenantBranding, type TenantModel } from '../../control-plane/index.ts';
import { UnknownTenantError } from '../queryErrors.ts';
import { BrandingSourceEnum, ModelSourceEnum, OverLimitPolicyEnum } from './settingEnums.ts';
import { TenantType } from './tenant.ts';

/** What a tenant gets while it has chosen no policy: the governor's default. */
const DEFAULT_OVER_LIMIT_POLICY = 'EXACT_REJECT';

const TenantModelType = builder.objectRef<TenantModel>('TenantModel').implement({
  description: "The tenant's AI model entitlement; `model` is null when neither the tenant nor its tier names one.",
  fields: (t) => ({
    model: t.exposeString('model', { nullable: true }),
    source: t.field({ type: ModelSourceEnum, resolve: (model) => model.source }),
  }),
});

const TenantBrandingType = builder.objectRef<TenantBranding>('TenantBranding').implement({
  description: "The branding the tenant's users see.",
  fields: (t) => ({
    productName: t.string({ resolve: ({ branding }) => branding.productName }),
    logoUrl: t.string({ nullable: true, resolve: ({ branding }) => branding.logoUrl ?? null }),
    primaryColor: t.string({ nullable: true, resolve: ({ branding }) => branding.primaryColor ?? null }),
    source: t.field({ type: BrandingSourceEnum, resolve: (branding) => branding.source }),
  }),
});

async function batch<Value>(
  tenantIds: readonly string[],
  context: ApiContext,
  read: (q: ApiContext['db'], tenantIds: readonly string[]) => Promise<Map<string, Value>>,
): Promise<Array<Value | Error>> {
  const byTenant = await read(context.db, tenantIds);
  return tenantIds.map((tenantId) => byTenant.get(tenantId) ?? new UnknownTenantError(tenantId));
}

builder.objectFields(TenantType, (t) => ({
  overLimitPolicy: t.field({
    type: OverLimitPolicyEnum,
    description: 'What API_REQUESTS does over its limit.',
    resolve: (tenant) => tenant.apiOverLimitPolicy ?? DEFAULT_OVER_LIMIT_POLICY,
  }),
  model: t.loadable({
    type: TenantModelType,
    load: (tenantIds: string[], context) => batch(tenantIds, context, resolveTenantModels),
    resolve: (tenant) => tenant.tenantId,
  }),
  branding: t.loadable({
    type: TenantBrandingType,
    load: (tenantIds: string[], context) => batch(tenantIds, context, resolveTenantBrandings),
    resolve: (tenant) => tenant.tenantId,
  }),
}));
