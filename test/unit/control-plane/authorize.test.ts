import { describe, expect, it } from 'vitest';
import { authorize } from '../../../src/control-plane/controlPlaneCommand.ts';
import type { ControlPlaneCommand } from '../../../src/control-plane/controlPlaneCommand.ts';
import { setTenantBranding, setTenantOverride } from '../../../src/control-plane/tenantCommands.ts';

const branding = setTenantBranding as ControlPlaneCommand<never>;
const override = setTenantOverride as ControlPlaneCommand<never>;
const onAcme = { target: 'tenant-acme', reads: [], tenantId: 'acme' };

describe('authorize', () => {
  it('lets an operator run every command', () => {
    expect(authorize({ id: 'ops', role: 'OPERATOR' }, override, onAcme)).toBeUndefined();
  });

  it("lets a tenant admin change only its own tenant's own choices", () => {
    expect(authorize({ id: 'a', role: 'TENANT_ADMIN', tenantId: 'acme' }, branding, onAcme)).toBeUndefined();
    expect(authorize({ id: 'a', role: 'TENANT_ADMIN', tenantId: 'other' }, branding, onAcme)).toMatchObject({ kind: 'Forbidden' });
    expect(authorize({ id: 'a', role: 'TENANT_ADMIN', tenantId: 'acme' }, override, onAcme)).toMatchObject({ kind: 'Forbidden' });
  });

  it('refuses reading roles and callers without an identity', () => {
    for (const role of ['AUDITOR', 'SERVICE', 'TENANT_VIEWER'] as const) {
      expect(authorize({ id: 'x', role, tenantId: 'acme' }, branding, onAcme)).toMatchObject({ kind: 'Forbidden' });
    }
    expect(authorize({ id: ' ', role: 'OPERATOR' }, override, onAcme)).toMatchObject({ kind: 'Forbidden' });
  });
});
