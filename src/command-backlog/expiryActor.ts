import type { CommandActor } from './types.ts';

/** Expiry is the service's own doing, not a caller's: its events name this actor. */
export const EXPIRY_ACTOR: CommandActor = { id: 'system:command-expiry' };
