import { describe, expect, it } from 'vitest';
import { setBrandingDefault, setPlatformDefault } from '../../../src/control-plane/platformCommands.ts';
import type { Branding } from '../../../src/ledger/catalog/controlPlane.ts';
import { given } from '../../support/controlPlaneSpec.ts';

describe('setPlatformDefault', () => {
  it('given nothing, sets the default on the platform stream', () => {
    expect(given().when(setPlatformDefault, { dimension: 'API_REQUESTS', ratePerSecond: 2000, reason: 'small cluster' })).toEqual({
      stream: 'platform',
      events: [{ type: 'PlatformDefaultSet', data: { dimension: 'API_REQUESTS', previous: null, value: { ratePerSecond: 2000 } } }],
      reason: 'small cluster',
    });
  });

  it('given a default, carries it as the previous value', () => {
    const before = { stream: 'platform', type: 'PlatformDefaultSet' as const, data: { dimension: 'INGEST' as const, previous: null, value: { ratePerSecond: 500, burst: 1000 } } };
    expect(given(before).when(setPlatformDefault, { dimension: 'INGEST', ratePerSecond: 400, burst: 800 })).toMatchObject({
      events: [{ data: { previous: { ratePerSecond: 500, burst: 1000 }, value: { ratePerSecond: 400, burst: 800 } } }],
    });
  });

  it('refuses a burst for API_REQUESTS (a fixed window has no burst)', () => {
    expect(given().when(setPlatformDefault, { dimension: 'API_REQUESTS', ratePerSecond: 10, burst: 20 })).toMatchObject({
      error: { kind: 'InvalidLimit', field: 'burst' },
    });
  });
});

describe('setBrandingDefault', () => {
  it('sets branding.default with the previous one', () => {
    expect(given().when(setBrandingDefault, { branding: { productName: 'Acme IoT', primaryColor: '#AABBCC' } })).toEqual({
      stream: 'platform',
      events: [{ type: 'BrandingDefaultSet', data: { previous: null, branding: { productName: 'Acme IoT', primaryColor: '#aabbcc' } } }],
    });
  });

  it('stores the logo URL normalised, so what it holds cannot break out of an attribute', () => {
    const branding = (logoUrl: string) => given().when(setBrandingDefault, { branding: { productName: 'Acme', logoUrl } });
    expect(branding('https://evil.example/a.png" onerror="alert(1)')).toMatchObject({
      events: [{ data: { branding: { logoUrl: 'https://evil.example/a.png%22%20onerror=%22alert(1)' } } }],
    });
    expect(branding(' HTTPS://CDN.Example:443/a/../logo.png?v=1 ')).toMatchObject({ events: [{ data: { branding: { logoUrl: 'https://cdn.example/logo.png?v=1' } } }] });
    expect(branding('https://cdn.example/<script>')).toMatchObject({ events: [{ data: { branding: { logoUrl: 'https://cdn.example/%3Cscript%3E' } } }] });
  });

  it.each([
    [{ productName: '' }, 'branding.productName'],
    [{ productName: 'Acme', logoUrl: 'http://insecure.example/logo.png' }, 'branding.logoUrl'],
    [{ productName: 'Acme', logoUrl: 'https://user:pw@cdn.example/logo.png' }, 'branding.logoUrl'],
    [{ productName: 'Acme', logoUrl: 'https://:pw@cdn.example/logo.png' }, 'branding.logoUrl'],
    [{ productName: 'Acme', logoUrl: 'javascript:alert(1)' }, 'branding.logoUrl'],
    [{ productName: 'Acme', logoUrl: '//cdn.example/logo.png' }, 'branding.logoUrl'],
    [{ productName: 'Acme', logoUrl: 'https://cdn.example/\ud800' }, 'branding.logoUrl'],
    [{ productName: 'Acme\u0000' }, 'branding.productName'],
    [{ productName: 'Acme', primaryColor: 'red' }, 'branding.primaryColor'],
    [{ productName: 'Acme', favicon: 'x' }, 'branding.favicon'],
  ])('refuses %j', (branding, field) => {
    expect(given().when(setBrandingDefault, { branding: branding as unknown as Branding })).toMatchObject({ error: { kind: 'InvalidInput', field } });
  });
});
