/**
 * A claim from the TypeScript client: the lease lives exactly as long as its Claim stream (SPEC P8).
 * `openLease` sends the first message and resolves once Granted (calling `onQueued` for each Queued);
 * `release()` — or leaving an `await using` block — sends Release and waits for Released.
 *
 * The first message is a ClaimRequest, an Ask today; resuming a claim whose stream broke (SPEC S3) is
 * the same stream opened with `{ resume: { claimId, resumeToken } }` from the Granted this lease keeps,
 * which `#lost` is the one place to try — not done by this client yet.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { ClaimRequest, ClaimResponse, Granted, Queued } from '../../generated/ts/berth/v1/placement.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import type { Connection } from './connection.js';
import { BerthError, type ErrorContext, fromServiceError, NodeTimeout, serverUnavailable } from './errors.js';

/** Options of `claim()` / `acquire()` / `withClaim()`. */
export interface ClaimOptions {
  /** Aborting it before the grant abandons the claim (rejects with `signal.reason`); after, it does nothing. */
  signal?: AbortSignal;
  /** Bound on the wait for the grant, in ms (NodeTimeout); absent = waits as long as it takes. */
  timeoutMs?: number;
  /** Called with each Queued (SPEC P6: why the claim waits, e.g. "2 cpu(s)"). */
  onQueued?: (reason: Queued) => void;
}

type Call = ClientDuplexStream<ClaimRequest, ClaimResponse>;

/** A held claim: its Granted and the fields engines read most, `release()`, and `await using`. */
export class Lease implements AsyncDisposable {
  /** Aborts (with the mapped BerthError as its reason) when the claim is lost other than by `release()`. */
  readonly signal: AbortSignal;
  readonly #call: Call;
  readonly #messages: AsyncIterator<ClaimResponse>;
  readonly #ctx: ErrorContext;
  readonly #lostCtl = new AbortController();
  #released?: Promise<void>;
  #ended?: Promise<void>;

  /** Made by `openLease` once granted. */
  constructor(
    readonly grant: Granted,
    call: Call,
    messages: AsyncIterator<ClaimResponse>,
    ctx: ErrorContext,
  ) {
    this.#call = call;
    this.#messages = messages;
    this.#ctx = ctx;
    this.signal = this.#lostCtl.signal;
    this.#ended = this.#watch();
  }

  /** Id of the claim: pass the lease (or this) as a run's `claim`. */
  get claimId(): string {
    return this.grant.claimId;
  }
  /** Machine holding it ("engine" for the engine host). */
  get machine(): string {
    return this.grant.machine;
  }
  /** True on a remote worker. */
  get remote(): boolean {
    return this.grant.remote;
  }
  /** What it holds: cores, exact GPU ids, MB, and the env the node must run with (SPEC P9). */
  get allocation(): Allocation {
    return this.grant.allocation ?? { cpus: 0, gpuIds: [], env: {}, resources: {} };
  }
  /** True when the ask was cut down to the best real machine (SPEC P5). */
  get clamped(): boolean {
    return this.grant.clamped;
  }

  /** Reads the stream after the grant: Released ends it; any other ending is the claim lost. */
  async #watch(): Promise<void> {
    try {
      for (;;) {
        const r = await this.#messages.next();
        if (r.done) return this.#lost(new BerthError(`claim ${this.claimId}: the server ended its stream`));
        if (r.value.kind?.$case === 'released') return;
      }
    } catch (e) {
      this.#lost(fromServiceError(e, this.#ctx));
    }
  }

  #lost(e: unknown): void {
    this.#lostCtl.abort(e);
  }

  /**
   * Sends Release and waits for Released; the same promise every time (idempotent).
   * @throws the mapped BerthError (e.g. WorkerGone) when the claim was lost before; the server gave it back either way.
   */
  release(): Promise<void> {
    this.#released ??= (async () => {
      if (this.signal.aborted) {
        this.#call.cancel();
        throw this.signal.reason;
      }
      this.#call.write({ kind: { $case: 'release', value: {} } });
      await this.#ended; // Released, then the server closes the stream
      this.#call.end();
      if (this.signal.aborted) throw this.signal.reason;
    })();
    return this.#released;
  }

  /** `await using lease = await client.claim(...)`: releases at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/**
 * Opens a Claim stream with `first` on the connection's next address while one answers UNAVAILABLE
 * before anything else, and resolves with the Lease once Granted.
 * @throws NoWorker, Oversize, InvalidAsk, Unavailable, ...; NodeTimeout after `timeoutMs`; `signal.reason` on abort.
 */
export async function openLease(
  conn: Connection,
  first: ClaimRequest,
  o: ClaimOptions,
  ctx: ErrorContext,
  what: string,
): Promise<Lease> {
  let last: unknown;
  for (const { stub, settle } of conn.attempts()) {
    o.signal?.throwIfAborted();
    const call = stub.claim(conn.metadata);
    const messages = (call as AsyncIterable<ClaimResponse>)[Symbol.asyncIterator]();
    let timedOut = false;
    const onAbort = () => call.cancel();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            call.cancel();
          }, o.timeoutMs);
    let got = false;
    try {
      call.write(first);
      for (;;) {
        const r = await messages.next();
        if (r.done) throw new BerthError(`${what}: the stream ended before a grant`);
        got = true;
        settle();
        const k = r.value.kind;
        if (k?.$case === 'queued') o.onQueued?.(k.value);
        else if (k?.$case === 'granted') return new Lease(k.value, call, messages, ctx);
        else throw new BerthError(`${what}: unexpected ${k?.$case ?? 'empty message'} before the grant`);
      }
    } catch (e) {
      call.cancel(); // the server gives back whatever it held (SPEC P8)
      if (o.signal?.aborted) throw o.signal.reason;
      if (timedOut) throw new NodeTimeout(`${what} not granted within ${o.timeoutMs} ms`);
      if (got || !serverUnavailable(e)) throw fromServiceError(e, ctx);
      last = e;
    } finally {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    }
  }
  throw conn.unreachable(last);
}
