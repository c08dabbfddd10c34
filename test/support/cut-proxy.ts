/**
 * Test support: a TCP proxy on loopback between a client and a server, whose `cut()` destroys every
 * connection through it at once (both sides see the link drop, as with a pulled cable that the
 * kernel reports) while it keeps accepting new ones; `close()` ends it.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface CutProxy {
  /** host:port to dial instead of the target. */
  address: string;
  /** Connections made through it so far. */
  readonly connections: number;
  /** Destroys every open connection (both sides); new ones are still forwarded. */
  cut(): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1:0 forwarding to `target` (host:port). */
export async function startCutProxy(target: string): Promise<CutProxy> {
  const i = target.lastIndexOf(':');
  const host = target.slice(0, i);
  const port = Number(target.slice(i + 1));
  const open = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((inbound) => {
    connections++;
    const outbound = createConnection({ host, port });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('proxy did not bind a TCP port');
  const cut = () => {
    for (const s of open) s.destroy();
  };
  return {
    address: `127.0.0.1:${addr.port}`,
    get connections() {
      return connections;
    },
    cut,
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}
