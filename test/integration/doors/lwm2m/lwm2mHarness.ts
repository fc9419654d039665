// The LwM2M door as the suites start it (lwm2mDoor and quotaAtDoors tests), and the device keys they register.
import { pino } from 'pino';
import { readSettings } from '../../../../src/config.ts';
import { findIngestCredential, registerIngestCredential } from '../../../../src/auth/ingestKeys.ts';
import type { Db } from '../../../../src/db/db.ts';
import type { Governor } from '../../../../src/governance/index.ts';
import { startLwm2mDoor, type Lwm2mDoor, type Lwm2mDoorParts } from '../../../../src/doors/lwm2m/startLwm2mDoor.ts';
import { cachedCredentialLookup } from '../../../../src/doors/pipeline/credentialCache.ts';
import type { CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';

/** A key registered in `db` for `tenantId`: a device's (`subject` its name) or, with `subject` null, the tenant's. */
export async function registeredKey(db: Db, tenantId: string, subject: string | null): Promise<string> {
  const registered = await registerIngestCredential(db, { tenantId, kind: subject === null ? 'tenant' : 'device', subject });
  if (registered.status !== 'registered') throw new Error(registered.message);
  return registered.key;
}

/**
 * The door on a free UDP port of 127.0.0.1 with the suite's Governor and sink, the keys stored in `db`, an edge
 * limit of 1,000 datagrams a second that a suite never reaches, 64 KiB payloads and the production upload bounds.
 */
export function startTestLwm2mDoor(db: Db, governor: Governor, sink: CountingSink, onDropped?: Lwm2mDoorParts['onDropped']): Promise<Lwm2mDoor> {
  return startLwm2mDoor({
    port: 0,
    host: '127.0.0.1',
    parts: {
      governor,
      sink,
      edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }),
      findCredential: cachedCredentialLookup((each) => findIngestCredential(db, each)),
    },
    logger: pino({ level: 'silent' }),
    maxPayloadBytes: 64 * 1024,
    uploadLimits: readSettings({}).lwm2mUploads,
    ...(onDropped ? { onDropped } : {}),
  });
}
