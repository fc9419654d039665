// int8 and xid8 are 64-bit: both drivers would hand them back as strings (pg) or lose precision. We turn
// them into bigint here, in one place, so no caller ever compares a position as text.

export const INT8_OID = 20;
export const XID8_OID = 5069;

export function parseBigint(text: string): bigint {
  return BigInt(text);
}
