// Page sizes and cursors of every connection. Cursors are opaque to clients (base64url of the ledger
// position or key they stand for) so we may change what they encode without breaking anyone.
import { GraphQLError } from './graphql.ts';
import { textProblem } from '../db/storableValues.ts';

export { MAX_PAGE_SIZE } from '../control-plane/index.ts';
import { MAX_PAGE_SIZE } from '../control-plane/index.ts';
export const DEFAULT_PAGE_SIZE = 50;

export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
    throw new GraphQLError(`first must be from 0 to ${MAX_PAGE_SIZE}`, {
      extensions: { code: 'PAGE_SIZE_OUT_OF_RANGE', field: 'first', max: MAX_PAGE_SIZE },
    });
  }
  return first;
}

export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/**
 * The key a cursor stands for. Anything this API did not hand out (not base64url of a key, a key with text
 * storage could not hold, or one `isKey` refuses) is BAD_CURSOR, never a fault further down.
 */
export function decodeCursor(cursor: string | null | undefined, isKey: (key: string) => boolean = () => true): string | undefined {
  if (cursor === null || cursor === undefined) return undefined;
  const key = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  // Decoding replaces bytes that are not UTF-8 by U+FFFD: only a key that encodes back to the cursor is one we made.
  if (key === '' || encodeCursor(key) !== cursor || textProblem(key, 'after') || !isKey(key)) {
    throw new GraphQLError('after is not a cursor this API handed out', { extensions: { code: 'BAD_CURSOR', field: 'after' } });
  }
  return key;
}

/** A Relay connection over a page read forwards from a cursor; backwards paging is not offered. */
export function toConnection<Node>(page: { nodes: readonly Node[]; hasNextPage: boolean }, keyOf: (node: Node) => string) {
  const edges = page.nodes.map((node) => ({ node, cursor: encodeCursor(keyOf(node)) }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: false,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
