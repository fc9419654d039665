// Step 5 of the front door: does the presented credential let this sender post here? Runs after admission.
import type { IngestCredential } from '../../auth/index.ts';

export type SenderCheck = { status: 'authorized'; credential: IngestCredential } | { status: 'unauthorized'; message: string };

export type Destination =
  | { route: 'http'; tenantId: string; entries: readonly Record<string, unknown>[] }
  | { route: 'integration'; tenantId: string; integration: string };

export function authorizeSender(credential: IngestCredential | null, destination: Destination): SenderCheck {
  if (!credential || credential.tenantId !== destination.tenantId) {
    return { status: 'unauthorized', message: 'the X-Device-Key is not a key of this tenant' };
  }
  if (destination.route === 'http') {
    if (credential.kind === 'integration') return { status: 'unauthorized', message: 'an integration key cannot post device readings' };
    if (credential.kind === 'device') {
      // A device key speaks for one device only: it cannot post readings in another device's name.
      const entries = destination.entries;
      for (let i = 0; i < entries.length; i++) {
        const deviceId = entries[i]!.deviceId;
        if (deviceId !== undefined && deviceId !== credential.subject) {
          return { status: 'unauthorized', message: `readings[${i}] names a device this key does not belong to` };
        }
      }
    }
    return { status: 'authorized', credential };
  }
  if (credential.kind === 'device') return { status: 'unauthorized', message: 'a device key cannot post integration uplinks' };
  if (credential.kind === 'integration' && credential.subject !== destination.integration) {
    return { status: 'unauthorized', message: `the key belongs to integration "${credential.subject}", not "${destination.integration}"` };
  }
  return { status: 'authorized', credential };
}
