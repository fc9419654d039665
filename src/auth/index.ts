// The surface of auth: bearer tokens (the API's callers and the admission door's services) and ingest keys
// (the doors' X-Device-Key, issued through the API and the CLI). api and doors both import this file; auth
// imports neither. See README.md.
export {
  describeJwtSecret,
  jwtSecretCandidates,
  JWT_SECRET_FILE,
  loadOrCreateJwtSecret,
  type JwtSecret,
  type JwtSecretSettings,
} from './jwtSecret.ts';
export {
  canAuditTenant,
  canDeliverCommands,
  canManageIngestKeys,
  canReadEverything,
  canReadTenant,
  isRole,
  isTenantRole,
  ROLES,
} from './roles.ts';
export { mintToken, secretKey, TOKEN_ISSUER, type MintTokenOptions } from './token.ts';
export {
  createTokenVerifier,
  DEFAULT_MAX_TOKEN_TTL_SECONDS,
  isRefusal,
  MAX_CLOCK_SKEW_SECONDS,
  type TokenClaimSettings,
  type TokenKeySettings,
  type TokenRefusal,
  type TokenVerifier,
} from './verifyToken.ts';
export {
  describeIngestKey,
  findIngestCredential,
  listIngestKeys,
  registerIngestCredential,
  revokeIngestCredential,
  revokeIngestKeyById,
  type CredentialKind,
  type IngestCredential,
  type IngestKeyListing,
  type RegisterCredentialResult,
  type RevokeByIdResult,
} from './ingestKeys.ts';
