// Limits on what one query may ask for, checked at validation before anything runs. The numbers leave room
// for the deepest query the dashboards send (tenants -> edges -> node -> tier -> limits -> value: depth 7)
// and for `tenants(first: 500) { ... }`: armor's cost counts the query's shape, not the page size, which
// the connection fields cap at MAX_PAGE_SIZE themselves.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { Plugin } from 'graphql-yoga';

export const PROTECTION_LIMITS = {
  maxDepth: 10,
  maxAliases: 15,
  maxCost: 5000,
  maxTokens: 2000,
  maxDirectives: 20,
} as const;

export function useProtection(): Plugin {
  return EnvelopArmorPlugin({
    maxDepth: { n: PROTECTION_LIMITS.maxDepth },
    maxAliases: { n: PROTECTION_LIMITS.maxAliases },
    costLimit: { maxCost: PROTECTION_LIMITS.maxCost },
    maxTokens: { n: PROTECTION_LIMITS.maxTokens },
    maxDirectives: { n: PROTECTION_LIMITS.maxDirectives },
    blockFieldSuggestion: { enabled: true },
  }) as Plugin;
}
