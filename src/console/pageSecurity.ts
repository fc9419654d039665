// The headers every HTML page of the service is served with (the console's and GraphiQL's): a
// Content-Security-Policy that loads nothing from elsewhere, talks to nothing but this service and may not be
// framed (clickjacking), `nosniff` so no response is taken for another type, and no Referer sent anywhere.
import { createHash } from 'node:crypto';

const COMMON = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The console (dist/console): its scripts and styles are files of its own. */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  ...COMMON,
};

/**
 * GraphiQL's page (@graphql-yoga/render-graphiql) inlines its code: its scripts are allowed by their SHA-256
 * hashes (CSP 3 hash sources), so no other inline script (an injected one) runs. Its editor starts its
 * workers from blob: URLs, its styles are inline and its icons data: URLs; it fetches and subscribes on
 * this service's /graphql only.
 */
export function graphiqlSecurityHeaders(page: string): Record<string, string> {
  const hashes = inlineScripts(page).map((script) => `'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`);
  return {
    'content-security-policy': [
      "default-src 'none'",
      `script-src ${hashes.length > 0 ? hashes.join(' ') : "'none'"}`,
      'worker-src blob:',
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'none'",
    ].join('; '),
    ...COMMON,
  };
}

/** The text of each inline <script> element (one without a src) of an HTML page, as the browser hashes it. */
function inlineScripts(page: string): string[] {
  const scripts: string[] = [];
  const opening = /<script\b([^>]*)>/gi;
  for (let match = opening.exec(page); match !== null; match = opening.exec(page)) {
    const start = match.index + match[0].length;
    const end = page.indexOf('</script>', start);
    if (end < 0) break;
    if (!/\bsrc\s*=/i.test(match[1] ?? '')) scripts.push(page.slice(start, end));
    opening.lastIndex = end + '</script>'.length;
  }
  return scripts;
}
