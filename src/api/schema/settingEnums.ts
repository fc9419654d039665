// Enums of the tenant settings beside the limits: over-limit policy, and where a model or branding came from.
import { builder } from '../builder.ts';

export const OverLimitPolicyEnum = builder.enumType('OverLimitPolicy', {
  description: 'What API_REQUESTS does over its limit: reject exactly at the limit, or keep a stable sample of callers.',
  values: ['EXACT_REJECT', 'STABLE_DOWNSAMPLE'] as const,
});

export const ModelSourceEnum = builder.enumType('ModelSource', {
  description: "Where a tenant's AI model came from; NONE: neither the tenant nor its tier names one.",
  values: ['TENANT_ASSIGNMENT', 'TIER_DEFAULT', 'NONE'] as const,
});

export const BrandingSourceEnum = builder.enumType('BrandingSource', {
  description: "Where a tenant's branding came from: its own, the operator's branding.default, or the shipped default.",
  values: ['TENANT', 'BRANDING_DEFAULT', 'SHIPPED_DEFAULT'] as const,
});
