// Limits on what one query may ask for, checked at validation before anything runs. Our schema has no cycles
// and its deepest path (tenants -> edges -> node -> tier -> limits -> value -> ratePerSecond) is 7 deep, so
// depth 10 refuses only crafted queries. Armor's cost multiplies a selection by its literal `first` and by
// 1.5 per level: `tenants(first: 500) { edges { node { effectiveLimits { source } commandBacklog { undelivered } } } }`
// costs about 16,600, a page of 500 history entries with every field about 41,000, and a page of 500
// tenants with every field of tier, limits, overrides and backlog about 119,000. 150,000 admits each of
// those once and refuses such pages repeated under aliases. A `first` passed as a variable costs as 1, which
// is why the connection fields also cap every page at 500 themselves.
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { Plugin } from 'graphql-yoga';

export const PROTECTION_LIMITS = {
  maxDepth: 10,
  maxAliases: 15,
  maxCost: 150_000,
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
