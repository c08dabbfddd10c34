/** Test support: loopback ports. */
import { createServer } from 'node:net';

/** A loopback port nothing listens on (bound, then closed): dialling it is refused (ECONNREFUSED). */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}
