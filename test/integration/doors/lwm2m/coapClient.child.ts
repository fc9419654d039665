// An LwM2M client in a child process: sends the CoAP requests in LWM2M_CLIENT (JSON) one after another from
// one socket (so a registration's address is the Sends' address) and prints each answer as a JSON line:
// {"code": "2.01", "maxAge": 1, "location": "rd/..."}.
import { createSocket } from 'node:dgram';
import { Agent, request } from 'coap';

interface ClientRequest {
  method: 'POST' | 'DELETE' | 'GET';
  pathname: string;
  query?: string;
  contentFormat?: string;
  /** The payload: text, or base64 when `base64` is set. */
  payload?: string;
  base64?: boolean;
  /** Send the payload block-wise (Block1) in blocks of 2^(block1 + 4) bytes, as the coap package does. */
  block1?: number;
  /** Ask to observe (Observe: 0, with a GET). */
  observe?: boolean;
}

const { port, requests } = JSON.parse(process.env.LWM2M_CLIENT ?? '{}') as { port: number; requests: ClientRequest[] };
// A socket of its own keeps one source port for every request (an Agent's own socket is closed when idle).
const socket = createSocket('udp4');
await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
const agent = new Agent({ type: 'udp4', socket });

for (const each of requests) {
  const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const req = request({ hostname: '127.0.0.1', port, method: each.method, pathname: each.pathname, query: each.query ?? '', agent, confirmable: true, observe: each.observe === true });
    if (each.contentFormat) req.setOption('Content-Format', each.contentFormat);
    if (each.block1 !== undefined) req.setOption('Block1', Buffer.from([each.block1]));
    req.on('response', (res) => {
      // Repeated options: headers keeps only one, the option list all of them.
      const location = (res.options as { name: string; value: unknown }[]).filter((option) => option.name === 'Location-Path').map((option) => String(option.value));
      resolve({
        code: res.code,
        maxAge: res.headers['Max-Age'],
        location: location.length > 0 ? location.join('/') : undefined,
        diagnostic: res.payload.toString('utf8'),
        observe: res.headers['Observe'],
        size1: res.headers['Size1'],
      });
      // An observation (if the server made one) is not followed.
      if (each.observe) (res as unknown as { close?: () => void }).close?.();
    });
    req.on('error', reject);
    req.end(each.payload === undefined ? undefined : Buffer.from(each.payload, each.base64 ? 'base64' : 'utf8'));
  });
  console.log(JSON.stringify(answer));
}
agent.close();
socket.close();
