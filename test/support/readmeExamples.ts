// Takes the examples out of a README's text, so tests can decode or replay them as written
// (test/unit/doors/http/readmeExamples.test.ts, test/e2e/readmeSteps.test.ts).

/** The `-d '...'` body of every curl command (continued lines joined) whose URL contains `route`. */
export function curlBodies(markdown: string, route: string): string[] {
  const lines = markdown.replace(/\\\n\s*/g, ' ').split('\n');
  return lines
    .filter((line) => /^\s*curl\b/.test(line) && line.includes(route))
    .map((line) => /-d '([^']*)'/.exec(line)?.[1])
    .filter((body): body is string => body !== undefined);
}

/** The quoted body of every `curl ... <route> ... -d '...'`, the body allowed to span lines. */
export function multilineCurlBodies(markdown: string, route: string): string[] {
  const escaped = route.replace(/[/.*+?^${}()|[\]\\]/g, '\\$&');
  return [...markdown.matchAll(new RegExp(`curl [^\\n]*${escaped}[^\\n]*-d '([^']*)'`, 'g'))].map((match) => match[1]!);
}
