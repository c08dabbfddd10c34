/**
 * BerthClient: the calls a TypeScript engine makes on berth (berth.v1 PlacementService), over the
 * generated stubs. Every call takes an AbortSignal; every failure is a BerthError of errors.ts, a
 * node's own exception a RemoteError; a clamped grant or call warns `Clamped` (option `onWarning`,
 * default `process.emitWarning`).
 */
import type {
  CancelResponse,
  CompileResponse,
  GetSnapshotResponse,
  SatisfiableResponse,
  WatchEventsResponse,
} from '../../generated/ts/berth/v1/placement.js';
import { type AskInput, oversizeFails, toAsk } from './asks.js';
import { Connection, type ConnectionOptions } from './connection.js';
import { BerthError, InvalidAsk, Unavailable } from './errors.js';
import { type ClaimOptions, type Lease, openLease } from './lease.js';
import { emitWarning, type WarningHandler, warnClamped } from './outcomes.js';
import { runItems } from './run-stream.js';
import { positive, type RunInput, type RunItem, runSpec } from './runs.js';
import { serverStream } from './streams.js';

/** Options of a BerthClient: where and how it dials (ConnectionOptions), and where its warnings go. */
export interface BerthClientOptions extends ConnectionOptions {
  /**
   * Receives `Clamped` warnings; default `process.emitWarning` (shown once per process, or via
   * process.on('warning')).
   */
  onWarning?: WarningHandler;
}

/** What every call but a claim takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of `run()`: also `onEvent`, given every item before the result (Started, metrics, logs, links, retries). */
export interface RunOptions extends CallOptions {
  onEvent?: (item: Exclude<RunItem, { $case: 'result' }>) => void;
}

/** Said when the server ends the event stream itself (draining, stopped). */
const ENDED_BY_SERVER = 'event stream ended by the server (draining or stopped); call events() again once it is back';

/** A connection to berth (one address or several) and the calls an engine makes; `close()` when done. */
export class BerthClient {
  readonly #conn: Connection;
  readonly #warn: WarningHandler;

  /** @throws InvalidAsk for a bad `address`; Error naming tlsCa/tlsCert/tlsKey for an unreadable PEM file. */
  constructor(o: BerthClientOptions = {}) {
    this.#conn = new Connection(o);
    this.#warn = o.onWarning ?? emitWarning;
  }

  /** The server addresses, in the order tried. */
  get addresses(): readonly string[] {
    return this.#conn.addresses;
  }

  /**
   * A lease on the ask's cores, GPUs and MB on one machine, once granted (SPEC P1-P9):
   * `await using lease = await client.claim({ cpus: 2, gpus: 1 })` releases at the end of the block.
   * `ask.holdMs` keeps the claim for its holder after a broken stream (SPEC S3), and the lease takes it back
   * by itself (same claim id and allocation) for that long; `lease.signal` aborts with ClaimLost when it cannot.
   * @throws InvalidAsk naming the field, NoWorker (a required label no machine carries), Oversize,
   *   NodeTimeout (`timeoutMs`), Unavailable; `signal.reason` when aborted before the grant.
   */
  async claim(ask: AskInput = {}, o: ClaimOptions = {}): Promise<Lease> {
    const a = toAsk(ask);
    if (o.timeoutMs !== undefined) positive('timeoutMs', o.timeoutMs);
    const what = `claim${a.node ? ` for ${a.node}` : ''}`;
    const ctx = { label: a.label, oversizeFails: oversizeFails(a) };
    const lease = await openLease(this.#conn, { kind: { $case: 'ask', value: a } }, o, ctx, what, a.holdMs);
    warnClamped(`claim ${a.node || lease.claimId}`, lease.grant, this.#warn);
    return lease;
  }

  /** The same as `claim()`, for holding several leases at once and `release()`-ing each when done. */
  acquire(ask: AskInput = {}, o: ClaimOptions = {}): Promise<Lease> {
    return this.claim(ask, o);
  }

  /** Gives `lease` back (Release, then Released): the same as `lease.release()`. */
  release(lease: Lease): Promise<void> {
    return lease.release();
  }

  /**
   * Runs `fn(lease)` inside a claim and releases it whatever `fn` does; resolves to what `fn` returns.
   * A release error (the claim was lost) is thrown unless `fn` threw: then `fn`'s error wins.
   */
  async withClaim<T>(ask: AskInput, fn: (lease: Lease) => Promise<T> | T, o: ClaimOptions = {}): Promise<T> {
    const lease = await this.claim(ask, o);
    let value: T;
    try {
      value = await fn(lease);
    } catch (e) {
      await lease.release().catch(() => {}); // the server gave it back on its side
      throw e;
    }
    await lease.release();
    return value;
  }

  /**
   * Runs one call on a worker and resolves to the node's value (JSON-like; a command's is `{exit_code: 0}`).
   * A broken stream (a server restart, a cut link) is followed again by call id for up to 60 s (run-stream.ts).
   * @throws RemoteError (the node's own exception: `remoteType`, `remoteTraceback`), NodeExited, NodeTimeout,
   *   WorkerGone, NoWorker, Oversize, Cancelled, NotFound (claim no longer held), InvalidAsk; `signal.reason`.
   */
  async run(req: RunInput, o: RunOptions = {}): Promise<unknown> {
    for await (const item of this.streamRun(req, o)) {
      if (item.$case === 'result') return item.value.value;
      o.onEvent?.(item);
    }
    throw new BerthError('unreachable: a run stream ends with its result or throws');
  }

  /**
   * The same run as an async iterator: `started`, `metric` / `log` / `link` items in order, then `result`;
   * the node's exception is thrown by the iteration. Breaking out of the loop cancels the call. After a
   * broken stream the call is followed again from the last item seen: each item comes once (SPEC S3).
   */
  streamRun(req: RunInput, o: CallOptions = {}): AsyncGenerator<RunItem, void, undefined> {
    const spec = runSpec(req);
    return runItems(this.#conn, spec, this.#warn, o.signal);
  }

  /**
   * Cancels run `runId`: its in-flight calls get a cancel frame, its waiting claims are abandoned.
   * Resolves to the counts `{calls, claims}`. @throws InvalidAsk naming `run_id` when it is empty.
   */
  async cancel(runId: string, o: CallOptions = {}): Promise<CancelResponse> {
    if (typeof runId !== 'string' || !runId)
      throw new InvalidAsk(`run_id: must name a run (got ${JSON.stringify(runId)})`, 'run_id');
    return this.#conn.unary<CancelResponse>((s, md, cb) => s.cancel({ runId }, md, cb), o.signal);
  }

  /** What the ask would do now: `verdict` (RUNS_NOW, WAITS, ...), `clampedTo`, `limiting`, `waitFor`. */
  satisfiable(ask: AskInput = {}, o: CallOptions = {}): Promise<SatisfiableResponse> {
    const a = toAsk(ask);
    const ctx = { label: a.label, oversizeFails: oversizeFails(a) };
    return this.#conn.unary<SatisfiableResponse>(
      (s, md, cb) => s.satisfiable({ ask: a, group: undefined }, md, cb),
      o.signal,
      ctx,
    );
  }

  /** The books: machines (engine first), waiting and held claims, calls in flight, provisioners. */
  snapshot(o: CallOptions = {}): Promise<GetSnapshotResponse> {
    return this.#conn.unary<GetSnapshotResponse>((s, md, cb) => s.getSnapshot({}, md, cb), o.signal);
  }

  /**
   * Compiles a node's `source` on a worker carrying `label` without running it (SPEC W5): `ok`, or
   * `failure` (e.g. the SyntaxError); `checked` is false when no such worker is attached.
   */
  compile(
    c: { source: string; label: string; flow?: string; node?: string },
    o: CallOptions = {},
  ): Promise<CompileResponse> {
    const req = { source: c.source, label: c.label, flow: c.flow ?? 'flow', node: c.node ?? 'node' };
    return this.#conn.unary<CompileResponse>((s, md, cb) => s.compile(req, md, cb), o.signal, { label: c.label });
  }

  /**
   * Placement and worker events as they happen (node_queued, node_placed, claim_released, ...).
   * Ends quietly when `signal` aborts; throws Unavailable when the server ends the stream.
   */
  async *events(o: CallOptions = {}): AsyncGenerator<WatchEventsResponse, void, undefined> {
    yield* serverStream(this.#conn, (s, md) => s.watchEvents({}, md), { signal: o.signal, quietAbort: true });
    if (!o.signal?.aborted) throw new Unavailable(ENDED_BY_SERVER);
  }

  /** Closes the channels; claims still held end and the server gives them back (SPEC P8). */
  close(): void {
    this.#conn.close();
  }

  /** `using client = new BerthClient(...)` closes it at the end of the block. */
  [Symbol.dispose](): void {
    this.close();
  }
}
