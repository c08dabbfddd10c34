/**
 * Test support: a TCP proxy on loopback between an agent and its server, whose link a test can cut
 * (every connection through it reset, new ones refused) and restore — a pulled cable or a flapping
 * switch, without touching either process.
 */
import net from 'node:net';

/** A cuttable link to `target` (`host:port`). */
export class LinkProxy {
  readonly #server = net.createServer((client) => this.#connect(client));
  readonly #open = new Set<net.Socket>();
  #cut = false;
  address = '';
  /** Connections forwarded so far. */
  connections = 0;
  /** Connections reset at once because the link was cut. */
  refused = 0;

  constructor(public target: string) {}

  /** New connections go to `target` from now on (a server moved: another cluster member leads). */
  retarget(target: string): void {
    this.target = target;
  }

  /** Listens on 127.0.0.1 (ephemeral port); resolves with the address to dial. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const port = (this.#server.address() as net.AddressInfo).port;
    this.address = `127.0.0.1:${port}`;
    return this.address;
  }

  /** Resets every connection through the link; until restore(), new ones are reset at once. */
  cut(): void {
    this.#cut = true;
    for (const s of this.#open) s.resetAndDestroy();
    this.#open.clear();
  }

  /** Lets connections through again. */
  restore(): void {
    this.#cut = false;
  }

  /** Closes the proxy and every connection. */
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #connect(client: net.Socket): void {
    if (this.#cut) {
      this.refused++;
      client.resetAndDestroy();
      return;
    }
    const [host, port] = [
      this.target.slice(0, this.target.lastIndexOf(':')),
      this.target.slice(this.target.lastIndexOf(':') + 1),
    ];
    this.connections++;
    const upstream = net.connect(Number(port), host);
    for (const s of [client, upstream]) {
      this.#open.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.#open.delete(s);
        (s === client ? upstream : client).destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
