/**
 * The opt-in HTTP port (`berth serve --metrics-listen host:port`, issue 13): Prometheus metrics at
 * /metrics, the live status page at /, its data at /api/snapshot (JSON, the GetSnapshot shape) and
 * /api/events (Server-Sent Events fed by the event bus, starting with the last RECENT events).
 * Read-only: GET and HEAD only (405 otherwise). With a token configured every route but the page
 * itself requires it, as `authorization: Bearer <token>` or `?token=` (EventSource cannot send
 * headers): 401 without it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { BerthEvent, EventBus } from '../events.js';
import { sameSecret } from '../server/identity.js';
import type { BerthMetrics } from './metrics.js';
import { PAGE_HTML } from './page.js';

/** Events replayed to a new page so it shows recent history at once. */
export const RECENT = 50;
/** Most events buffered for one slow SSE reader before it is disconnected (it reconnects). */
const MAX_SSE_BACKLOG_BYTES = 4 << 20;

/** What the HTTP port serves from. */
export interface ObserveDeps {
  events: EventBus;
  metrics: BerthMetrics;
  /** The snapshot as GetSnapshot answers it (JSON-serialisable). */
  snapshot(): unknown;
  /** The event as WatchEvents sends it (JSON-serialisable). */
  toJson(e: BerthEvent): unknown;
  token?: string;
}

/** The HTTP server of one berth server. `start()` binds, `stop()` closes every connection. */
export class ObserveServer {
  readonly #http: Server;
  readonly #recent: BerthEvent[] = [];
  readonly #unsubscribe: () => void;
  readonly #streams = new Set<ServerResponse>();
  #port = 0;

  constructor(
    readonly listen: string,
    readonly deps: ObserveDeps,
  ) {
    this.#unsubscribe = deps.events.subscribe((e) => {
      this.#recent.push(e);
      if (this.#recent.length > RECENT) this.#recent.shift();
    });
    this.#http = createServer(
      (req, res) =>
        void this.#route(req, res).catch((err: Error) => {
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`error: ${err.message}\n`);
        }),
    );
  }

  /** Bound port (useful with port 0); 0 before start. */
  get port(): number {
    return this.#port;
  }

  /** `http://host:port` of the page. */
  get url(): string {
    const host = this.listen.slice(0, this.listen.lastIndexOf(':'));
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.#port}`;
  }

  /** Binds `listen` ("host:port"). @throws Error `--metrics-listen <addr>: <why>` when it cannot. */
  start(): Promise<number> {
    const i = this.listen.lastIndexOf(':');
    const host = this.listen.slice(0, i).replace(/^\[(.*)\]$/, '$1');
    const port = Number(this.listen.slice(i + 1));
    return new Promise((resolve, reject) => {
      this.#http.once('error', (err) => reject(new Error(`--metrics-listen ${this.listen}: ${err.message}`)));
      this.#http.listen(port, host, () => {
        const a = this.#http.address();
        this.#port = typeof a === 'object' && a ? a.port : port;
        resolve(this.#port);
      });
    });
  }

  /** Ends the event streams and closes the port; resolves once closed. Idempotent. */
  stop(): Promise<void> {
    this.#unsubscribe();
    for (const s of this.#streams) s.end();
    this.#streams.clear();
    return new Promise((resolve) => {
      if (!this.#http.listening) return resolve();
      this.#http.close(() => resolve());
      this.#http.closeAllConnections();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://berth');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('read-only: GET or HEAD\n');
      return;
    }
    if (url.pathname === '/') {
      res
        .writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        })
        .end(PAGE_HTML);
      return;
    }
    if (!['/metrics', '/api/snapshot', '/api/events'].includes(url.pathname)) {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: try /, /metrics, /api/snapshot, /api/events\n');
      return;
    }
    if (!this.#authorized(req, url)) {
      res
        .writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="berth"' })
        .end('missing or wrong token\n');
      return;
    }
    if (url.pathname === '/metrics') {
      const body = await this.deps.metrics.scrape();
      res.writeHead(200, { 'content-type': this.deps.metrics.registry.contentType }).end(body);
    } else if (url.pathname === '/api/snapshot') {
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify(this.deps.snapshot()));
    } else {
      this.#events(req, res);
    }
  }

  #authorized(req: IncomingMessage, url: URL): boolean {
    const token = this.deps.token;
    if (!token) return true;
    const auth = req.headers.authorization ?? '';
    return sameSecret(auth.startsWith('Bearer ') ? auth.slice(7) : (url.searchParams.get('token') ?? ''), token);
  }

  /**
   * Server-Sent Events: the recent events (after `Last-Event-ID` when the browser reconnects, so
   * none is shown twice), a `watch_started` marker, then each new one as `event: berth` with
   * `id: <seq>`; a comment every 15 s keeps proxies open.
   */
  #events(req: IncomingMessage, res: ServerResponse): void {
    const after = Number(req.headers['last-event-id'] ?? -1);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    const send = (e: BerthEvent) => {
      if (res.writableLength > MAX_SSE_BACKLOG_BYTES) return res.destroy(); // slow reader: it reconnects
      res.write(`id: ${e.seq}\nevent: berth\ndata: ${JSON.stringify(this.deps.toJson(e))}\n\n`);
    };
    for (const e of this.#recent) if (!(e.seq <= after)) send(e);
    send({ kind: 'watch_started', detail: 'subscribed', seq: this.deps.events.seq, timeMs: Date.now() });
    const unsubscribe = this.deps.events.subscribe(send);
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    ping.unref();
    this.#streams.add(res);
    res.on('close', () => {
      unsubscribe();
      clearInterval(ping);
      this.#streams.delete(res);
    });
  }
}
