// A TCP proxy on a free port of 127.0.0.1 that hands every byte on after a delay, both ways: a slow network
// or a slow server as its client sees it (a reply late by the delay each way), for tests of what a slow reply
// costs (Redis behind the shared budget, the service behind the leasing client). Bytes keep their order; the
// delay may be changed while connections are open (a chunk never overtakes the one before it).
import net from 'node:net';

export interface DelayingProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** The delay added to each direction, ms; change it at any time. */
  delayMs: number;
  /** Chunks handed on so far, both ways. */
  readonly chunks: number;
  /**
   * Called as each chunk is handed on, with how long it was held: the set delay, or more when this process was
   * too busy to hand it on in time (a test on a shared machine tells such moments apart by it).
   */
  onHandOff?: (heldMs: number, atMs: number) => void;
  close(): Promise<void>;
}

export async function startDelayingProxy(target: { host: string; port: number }, delayMs: number): Promise<DelayingProxy> {
  const sockets = new Set<net.Socket>();
  let chunks = 0;
  const proxy: DelayingProxy = {
    port: 0,
    delayMs,
    get chunks() {
      return chunks;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  /** Pipes `from` into `to`, each chunk `proxy.delayMs` after it arrived and never before the chunk ahead of it. */
  const delayed = (from: net.Socket, to: net.Socket) => {
    let lastDueMs = 0;
    from.on('data', (chunk: Buffer) => {
      const arrivedMs = Date.now();
      const dueMs = Math.max(lastDueMs, arrivedMs + proxy.delayMs);
      lastDueMs = dueMs;
      setTimeout(() => {
        chunks++;
        if (!to.destroyed) to.write(chunk);
        const handedMs = Date.now();
        proxy.onHandOff?.(handedMs - arrivedMs, handedMs);
      }, dueMs - arrivedMs);
    });
    from.on('end', () => setTimeout(() => to.end(), Math.max(0, lastDueMs - Date.now())));
  };

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    delayed(client, upstream);
    delayed(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  proxy.port = (server.address() as net.AddressInfo).port;
  return proxy;
}
