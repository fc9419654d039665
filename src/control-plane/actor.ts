// Who is acting. It comes from the caller's authenticated identity (the API's token), never from a command's
// input, and every event a command appends names it.
export type Role = 'OPERATOR' | 'AUDITOR' | 'SERVICE' | 'TENANT_ADMIN' | 'TENANT_VIEWER';

export interface Actor {
  id: string;
  role: Role;
  /** Set for tenant roles: the one tenant they may see and change. */
  tenantId?: string;
}
