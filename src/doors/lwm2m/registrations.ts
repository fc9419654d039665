// LwM2M registrations (`POST /rd`): a device that proved its key is known by the address it registered from
// until its lifetime ends, so its Sends need not carry the key again (LwM2M identifies a registered client by
// its session). Only verified devices are held, at most `maxEntries` (the oldest give way), so memory is
// bounded by the devices that registered, not by traffic.
import { randomBytes } from 'node:crypto';

export interface Registration {
  id: string;
  tenantId: string;
  deviceId: string;
  address: string;
  expiresAtMs: number;
}

export class Registrations {
  private readonly byAddress = new Map<string, Registration>();
  private readonly byId = new Map<string, Registration>();

  constructor(private readonly maxEntries = 100_000) {}

  get size(): number {
    return this.byAddress.size;
  }

  register(address: string, tenantId: string, deviceId: string, lifetimeSeconds: number, nowMs: number): Registration {
    this.remove(this.byAddress.get(address));
    if (this.byAddress.size >= this.maxEntries) this.remove(this.byAddress.values().next().value);
    const registration = { id: randomBytes(8).toString('hex'), tenantId, deviceId, address, expiresAtMs: nowMs + lifetimeSeconds * 1000 };
    this.byAddress.set(address, registration);
    this.byId.set(registration.id, registration);
    return registration;
  }

  /** The live registration made from `address`, if any. */
  at(address: string, nowMs: number): Registration | undefined {
    const registration = this.byAddress.get(address);
    if (registration && registration.expiresAtMs <= nowMs) {
      this.remove(registration);
      return undefined;
    }
    return registration;
  }

  /** Update (`POST /rd/<id>`) from the address that registered: a new lifetime. */
  update(id: string, address: string, lifetimeSeconds: number | undefined, nowMs: number): boolean {
    const registration = this.byId.get(id);
    if (!registration || registration.address !== address || registration.expiresAtMs <= nowMs) return false;
    if (lifetimeSeconds !== undefined) registration.expiresAtMs = nowMs + lifetimeSeconds * 1000;
    return true;
  }

  /** De-register (`DELETE /rd/<id>`) from the address that registered. */
  deregister(id: string, address: string): boolean {
    const registration = this.byId.get(id);
    if (!registration || registration.address !== address) return false;
    this.remove(registration);
    return true;
  }

  private remove(registration: Registration | undefined): void {
    if (!registration) return;
    this.byAddress.delete(registration.address);
    this.byId.delete(registration.id);
  }
}
