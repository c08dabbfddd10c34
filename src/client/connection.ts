/**
 * The client's connection to berth: one or several server addresses (comma-separated; the next is tried
 * when one answers UNAVAILABLE for want of a server, and the leader a standby names in its `leader` trailer
 * before the rest, SPEC S7), the token as `authorization: Bearer`, and TLS or mutual TLS built by the CLI's
 * own `channelCredentials` (src/cli/client.ts) — SPEC R2.
 */
import type { ChannelOptions, ClientUnaryCall, Metadata, ServiceError } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { authMetadata, channelCredentials, DEFAULT_SERVER, type Pem } from '../cli/client.js';
import { address as addressSchema } from '../config/fields.js';
import { leaderHint } from '../ha/leader-hint.js';
import { type ErrorContext, fromServiceError, InvalidAsk, serverUnavailable, Unavailable } from './errors.js';

/** Where and how the client dials. */
export interface ConnectionOptions {
  /** "host:port", or several comma-separated ("a:50051,b:50051"); default $BERTH_SERVER or 127.0.0.1:50051. */
  address?: string;
  /** Token sent as `authorization: Bearer <token>`; default $BERTH_TOKEN; "" sends none. */
  token?: string;
  /** The CA to trust (PEM file path or bytes): turns TLS on. */
  tlsCa?: Pem;
  /** Client certificate and its key for mutual TLS (both or neither; needs `tlsCa`). */
  tlsCert?: Pem;
  tlsKey?: Pem;
}

/**
 * Long streams (a claim held for hours, a quiet call) keep their connection: a ping every 20 s even
 * without calls, given up after 10 s unanswered (the server permits pings every 5 s), as the Python client.
 * A server that was down a while is dialled again within 2 s of coming back (grpc-js's reconnect backoff
 * grows to 120 s by default), so that a claim or run resumes within its hold (SPEC S3).
 */
const CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_reconnect_backoff_ms': 2000,
};

const TLS_NAMES = { tlsCa: 'tlsCa', tlsCert: 'tlsCert', tlsKey: 'tlsKey' };

/** The addresses of `spec` ("a:1,b:2"), each checked. @throws InvalidAsk naming `address` and the bad entry. */
export function parseAddresses(spec: string): string[] {
  const list = spec
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (!list.length) throw new InvalidAsk(`address: must name a server, e.g. ${DEFAULT_SERVER} (got "${spec}")`);
  for (const a of list)
    if (!addressSchema.safeParse(a).success)
      throw new InvalidAsk(`address: expected host:port, e.g. ${DEFAULT_SERVER} (got ${JSON.stringify(a)})`, 'address');
  return list;
}

/**
 * One try of a call: the stub to call; `settle()` once it answered, `refused(e)` when it failed for want of a
 * server.
 */
export interface Attempt {
  stub: PlacementServiceClient;
  settle: () => void;
  refused: (e: unknown) => void;
}

/** One stub per address, made on first use, and the address that answered last (tried first). */
export class Connection {
  readonly addresses: readonly string[];
  readonly metadata: Metadata;
  readonly #credentials;
  readonly #stubs = new Map<string, PlacementServiceClient>();
  /** The address that answered last (a listed one, or a leader a standby named). */
  #current: string;

  /** @throws InvalidAsk for a bad address; Error naming `tlsCa`/`tlsCert`/`tlsKey` for an unreadable PEM file. */
  constructor(o: ConnectionOptions = {}) {
    this.addresses = parseAddresses(o.address ?? (process.env.BERTH_SERVER || DEFAULT_SERVER));
    if ((o.tlsCert === undefined) !== (o.tlsKey === undefined))
      throw new InvalidAsk('tlsCert, tlsKey: give both (mutual TLS) or neither', 'tlsCert');
    if (o.tlsCert !== undefined && o.tlsCa === undefined)
      throw new InvalidAsk('tlsCert: needs tlsCa (the CA that signed the server certificate)', 'tlsCa');
    this.#credentials = channelCredentials(o, TLS_NAMES);
    this.metadata = authMetadata(o.token ?? (process.env.BERTH_TOKEN || undefined));
    this.#current = this.addresses[0];
  }

  /**
   * The attempts of one call: the address that answered last first, then each listed address once; after an
   * attempt `refused` with a standby's leader hint, that leader next (at most once each).
   */
  *attempts(): Generator<Attempt> {
    const start = Math.max(0, this.addresses.indexOf(this.#current));
    const order = this.addresses.map((_, k) => this.addresses[(start + k) % this.addresses.length]);
    if (!this.addresses.includes(this.#current)) order.unshift(this.#current);
    const tried = new Set<string>();
    let hint: string | undefined;
    for (;;) {
      const address = hint && !tried.has(hint) ? hint : order.shift();
      if (address === undefined) return;
      hint = undefined;
      if (tried.has(address)) continue;
      tried.add(address);
      yield {
        stub: this.#stub(address),
        settle: () => (this.#current = address),
        refused: (e) => (hint = leaderHint(e)),
      };
    }
  }

  #stub(address: string): PlacementServiceClient {
    let stub = this.#stubs.get(address);
    if (!stub)
      this.#stubs.set(address, (stub = new PlacementServiceClient(address, this.#credentials, CHANNEL_OPTIONS)));
    return stub;
  }

  /**
   * One unary call, on the next address while one answers UNAVAILABLE for want of a server.
   * Rejects with the mapped BerthError (errors.ts), or `signal.reason` once `signal` aborts.
   */
  async unary<Res>(
    start: (
      stub: PlacementServiceClient,
      md: Metadata,
      cb: (e: ServiceError | null, r: Res) => void,
    ) => ClientUnaryCall,
    signal?: AbortSignal,
    ctx: ErrorContext = {},
  ): Promise<Res> {
    let last: unknown;
    for (const { stub, settle, refused } of this.attempts()) {
      signal?.throwIfAborted();
      try {
        const res = await unaryCall<Res>((cb) => start(stub, this.metadata, cb), signal);
        settle();
        return res;
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        if (!serverUnavailable(e)) throw fromServiceError(e, ctx);
        refused(e);
        last = e;
      }
    }
    throw this.unreachable(last);
  }

  /** The Unavailable for a call no address answered; names them when there are several. */
  unreachable(last: unknown): unknown {
    const mapped = fromServiceError(last);
    if (this.addresses.length < 2 || !(mapped instanceof Unavailable)) return mapped;
    return new Unavailable(`no server answered at ${this.addresses.join(', ')}: ${mapped.message}`);
  }

  /** Closes every channel; open claims end and the server gives them back (SPEC P8). */
  close(): void {
    for (const s of this.#stubs.values()) s.close();
  }
}

/** A grpc-js unary call as a promise, cancelled when `signal` aborts. */
function unaryCall<Res>(
  start: (cb: (e: ServiceError | null, r: Res) => void) => ClientUnaryCall,
  signal?: AbortSignal,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const onAbort = () => call.cancel();
    const call = start((e, r) => {
      signal?.removeEventListener('abort', onAbort);
      if (e) reject(e);
      else resolve(r);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
