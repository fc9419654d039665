// One POST over node:http with a body, read whole: the status, the replica that answered (HAProxy's
// X-Served-By) and the text. Used by the three-replica suite and by its traffic process, which need an agent
// of their own (a source address per client) and a bound on every answer.
import http from 'node:http';

export interface PostAnswer {
  status: number;
  servedBy: string;
  body: string;
}

export function postAnswer(
  baseUrl: URL | string,
  path: string,
  headers: Record<string, string>,
  body: string,
  { agent = false, timeoutMs = 20_000 }: { agent?: http.Agent | false; timeoutMs?: number } = {},
): Promise<PostAnswer> {
  const url = typeof baseUrl === 'string' ? new URL(baseUrl) : baseUrl;
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        agent,
        timeout: timeoutMs,
        headers: { ...headers, 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, servedBy: String(response.headers['x-served-by'] ?? '-'), body: text }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`${path}: no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}
