// Sends bytes over a socket exactly as given (fetch and http.request refuse or repair malformed requests) and
// reads the answer until the server closes the connection or the first response is complete.
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` (a whole HTTP/1.1 message) to 127.0.0.1:`port` and parses the first response. */
export function sendRaw(port: number, request: string, { timeoutMs = 10_000 } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms; received ${JSON.stringify(received.toString())}`));
    }, timeoutMs);
    const finish = () => {
      const parsed = parseResponse(received.toString('utf8'));
      if (parsed === null) return false;
      clearTimeout(timer);
      socket.destroy();
      resolve(parsed);
      return true;
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      finish();
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('end', () => {
      if (!finish()) {
        clearTimeout(timer);
        reject(new Error(`the server closed the connection without a complete answer: ${JSON.stringify(received.toString())}`));
      }
    });
    socket.write(request);
  });
}

/** A complete response with Content-Length framing, or null while more bytes are needed. */
function parseResponse(text: string): RawResponse | null {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(end + 4);
  const length = headers['content-length'];
  if (length !== undefined && Buffer.byteLength(body) < Number(length)) return null;
  if (headers['transfer-encoding'] === 'chunked') {
    const decoded = dechunk(body);
    if (decoded === null) return null;
    body = decoded;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

/** The body of a chunked message, or null until its last chunk has arrived. */
function dechunk(framed: string): string | null {
  let out = '';
  let at = 0;
  for (;;) {
    const lineEnd = framed.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(framed.slice(at, lineEnd), 16);
    if (size === 0) return out;
    const data = Buffer.from(framed.slice(lineEnd + 2), 'utf8');
    if (data.length < size + 2) return null;
    const chunk = data.subarray(0, size).toString('utf8');
    out += chunk;
    at = lineEnd + 2 + chunk.length + 2;
  }
}
