// Limits on what one query may ask for, checked at validation before anything runs. Our schema has no cycles
// and its deepest path (tenants -> edges -> node -> tier -> limits -> value -> ratePerSecond) is 7 deep, so
// depth 10 refuses only crafted queries. Armor's cost multiplies a selection by its literal `first` and by
// 1.5 per level: `tenants(first: 500) { edges { node { effectiveLimits { source } commandBacklog { undelivered } } } }`
// costs about 16,600, a page of 500 history entries with every field about 41,000, and a page of 500
// tenants with every field of tier, limits, overrides and backlog about 119,000. 150,000 admits each of
// those once and refuses such pages repeated under aliases. A `first` passed as a variable costs as 1, which
// is why the connection fields also cap every page at 500 themselves.
// A refusal here is not a syntax error (armor's own errors say "Syntax Error: ..."): each is answered with a
// code of its own in extensions.code (QUERY_TOO_COSTLY, QUERY_TOO_DEEP, TOO_MANY_ALIASES, TOO_MANY_DIRECTIVES),
// the limit in extensions.limit, and what to do in the message. The token count is checked while parsing and
// stays a parse error ("Syntax Error: Token limit of 2000 exceeded").
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export const PROTECTION_LIMITS = {
  maxDepth: 10,
  maxAliases: 15,
  maxCost: 150_000,
  maxTokens: 2000,
  maxDirectives: 20,
} as const;

/**
 * Armor's refusal, reported in its place: the same limit, its own code, no "Syntax Error" prefix, on the
 * validation context (a validation error like any other; an error thrown from validation would be masked as
 * "Unexpected error.").
 */
function refuseAs(code: string, limit: number, advice: string) {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) => {
        const refusal = new GraphQLError(`${error.message.replace(/^Syntax Error: /, '')} ${advice}`, { extensions: { code, limit } });
        if (context) context.reportError(refusal);
        else throw refusal;
      },
    ],
  };
}

export function useProtection(): Plugin {
  const limits = PROTECTION_LIMITS;
  return EnvelopArmorPlugin({
    maxDepth: { n: limits.maxDepth, ...refuseAs('QUERY_TOO_DEEP', limits.maxDepth, 'Select fewer nested levels.') },
    maxAliases: { n: limits.maxAliases, ...refuseAs('TOO_MANY_ALIASES', limits.maxAliases, 'Send fewer aliases per query.') },
    costLimit: {
      maxCost: limits.maxCost,
      ...refuseAs('QUERY_TOO_COSTLY', limits.maxCost, 'Ask for smaller pages (first) or fewer fields, and page with after.'),
    },
    // Counted while parsing, before there is a validation context: armor's own parse error stands.
    maxTokens: { n: limits.maxTokens },
    maxDirectives: { n: limits.maxDirectives, ...refuseAs('TOO_MANY_DIRECTIVES', limits.maxDirectives, 'Send fewer directives.') },
    blockFieldSuggestion: { enabled: true },
  }) as Plugin;
}
