// A control-plane command answers failures as values; at the GraphQL boundary each kind becomes the typed
// error of the mutation's payload union. Throwing is only the errors plugin's mechanism for picking the
// union member: nothing is thrown past the field, and the command has appended nothing.
import { builder } from '../builder.ts';
import type { ControlPlaneError, ControlPlaneResult } from '../../control-plane/index.ts';
import { formatPosition } from '../../ledger/index.ts';
import {
  ConcurrentEdit,
  Forbidden,
  InvalidInput,
  InvalidLimit,
  TenantAlreadyRegistered,
  TierAlreadyDefined,
  UnknownTenant,
  UnknownTier,
} from './errorClasses.ts';

export interface Applied {
  position: string;
}

export const AppliedType = builder.objectRef<Applied>('Applied').implement({
  description: 'The command appended its event; `position` is where it stands in the ledger.',
  fields: (t) => ({ position: t.exposeString('position') }),
});

export function applied(result: ControlPlaneResult): Applied {
  if (result.status === 'applied') return { position: formatPosition(result.position) };
  throw typedError(result.error);
}

function typedError({ kind, field, message }: ControlPlaneError): Error {
  const at = field ?? null;
  switch (kind) {
    case 'Forbidden':
      return new Forbidden(message);
    case 'InvalidLimit':
      return new InvalidLimit(message, at);
    case 'UnknownTenant':
      return new UnknownTenant(message, at ?? 'tenantId');
    case 'UnknownTier':
      return new UnknownTier(message, at ?? 'tierId');
    case 'TierAlreadyDefined':
      return new TierAlreadyDefined(message, at ?? 'tierId');
    case 'TenantAlreadyRegistered':
      return new TenantAlreadyRegistered(message, at ?? 'tenantId');
    case 'ConcurrentEdit':
      return new ConcurrentEdit(message, at);
    case 'InvalidInput':
    case 'UnknownDimension':
      return new InvalidInput(message, at);
  }
}

/** What any control-plane command may answer: refused, malformed, or lost a race too many times. */
const ALWAYS = [Forbidden, InvalidInput, ConcurrentEdit];

/** The errors each mutation may answer with, as the control plane's deciders return them. */
export const CONTROL_PLANE_ERRORS = {
  setPlatformDefault: [...ALWAYS, InvalidLimit],
  defineTier: [...ALWAYS, TierAlreadyDefined],
  setTierLimit: [...ALWAYS, InvalidLimit, UnknownTier],
  clearTierLimit: [...ALWAYS, UnknownTier],
  registerTenant: [...ALWAYS, TenantAlreadyRegistered, UnknownTier],
  assignTenantTier: [...ALWAYS, UnknownTenant, UnknownTier],
  setTenantOverride: [...ALWAYS, InvalidLimit, UnknownTenant],
  clearTenantOverride: [...ALWAYS, UnknownTenant],
  promoteShadowLimit: [...ALWAYS, UnknownTier, UnknownTenant],
  setTierDefaultModel: [...ALWAYS, UnknownTier],
  assignTenantModel: [...ALWAYS, UnknownTenant],
  setTenantBranding: [...ALWAYS, UnknownTenant],
  setBrandingDefault: [...ALWAYS],
  setTenantOverLimitPolicy: [...ALWAYS, UnknownTenant],
};
