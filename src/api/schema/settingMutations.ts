// The control plane's non-limit choices as mutations: a tier's default AI model, a tenant's own model,
// branding (the tenant's and the platform's branding.default) and the API_REQUESTS over-limit policy.
// Same shape as the limit mutations: `input`, one event or nothing, Applied or a typed error; the control
// plane decides who may (tenant admins may set their own tenant's branding and over-limit policy).
import { builder } from '../builder.ts';
import { DimensionEnum } from './enums.ts';
import { controlPlaneMutation } from './limitMutations.ts';
import { OverLimitPolicyEnum } from './settingEnums.ts';

const BrandingInput = builder.inputType('BrandingInput', {
  fields: (t) => ({
    productName: t.string({ required: true }),
    logoUrl: t.string({ description: 'An https URL.' }),
    primaryColor: t.string({ description: '`#rrggbb`.' }),
  }),
});

const SetTierDefaultModelInput = builder.inputType('SetTierDefaultModelInput', {
  fields: (t) => ({
    tierId: t.id({ required: true }),
    model: t.string({ description: 'Absent or null: the tier no longer names a default model.' }),
    reason: t.string(),
  }),
});

const AssignTenantModelInput = builder.inputType('AssignTenantModelInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    model: t.string({ description: "Absent or null: back to the tier's default model." }),
    reason: t.string(),
  }),
});

const SetTenantBrandingInput = builder.inputType('SetTenantBrandingInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    branding: t.field({ type: BrandingInput, description: 'null: back to branding.default (give it explicitly; absent is refused as InvalidInput).' }),
    reason: t.string(),
  }),
});

const SetBrandingDefaultInput = builder.inputType('SetBrandingDefaultInput', {
  fields: (t) => ({ branding: t.field({ type: BrandingInput, required: true }), reason: t.string() }),
});

const SetTenantOverLimitPolicyInput = builder.inputType('SetTenantOverLimitPolicyInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    dimension: t.field({ type: DimensionEnum, description: 'Only API_REQUESTS has a choice of policy; the default.' }),
    policy: t.field({ type: OverLimitPolicyEnum, required: true }),
    reason: t.string(),
  }),
});

controlPlaneMutation('setTierDefaultModel', SetTierDefaultModelInput);
controlPlaneMutation('assignTenantModel', AssignTenantModelInput);
controlPlaneMutation('setTenantBranding', SetTenantBrandingInput);
controlPlaneMutation('setBrandingDefault', SetBrandingDefaultInput);
controlPlaneMutation('setTenantOverLimitPolicy', SetTenantOverLimitPolicyInput);
