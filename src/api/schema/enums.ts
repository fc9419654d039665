import { ALLOWANCES, DIMENSIONS, QUOTA_PERIODS } from '../../governance/index.ts';
import { TREND_BUCKETS } from '../../metrics/index.ts';
import { builder } from '../builder.ts';

export const DimensionEnum = builder.enumType('Dimension', { values: DIMENSIONS });

export const AllowanceEnum = builder.enumType('Allowance', { values: ALLOWANCES });

export const LimitSourceEnum = builder.enumType('LimitSource', {
  description: 'Which level of the cascade supplied a value.',
  values: ['TENANT_OVERRIDE', 'TIER', 'PLATFORM_DEFAULT', 'SHIPPED_DEFAULT'] as const,
});

export const LimitModeEnum = builder.enumType('LimitMode', {
  description: 'How a limit acts: ENFORCE refuses over it; SHADOW is decided beside the enforced limit and refuses nothing, counting what it would have refused (TrendPoint.shadowLimited, governance_shadow_limited_units_total) until promoteShadowLimit enforces it.',
  values: ['ENFORCE', 'SHADOW'] as const,
});

export const TrendBucketEnum = builder.enumType('TrendBucket', { values: TREND_BUCKETS });

export const QuotaPeriodEnum = builder.enumType('QuotaPeriod', {
  description: 'The calendar period a quota counts over, in its time zone.',
  values: QUOTA_PERIODS,
});
