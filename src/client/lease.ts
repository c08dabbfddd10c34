/**
 * A claim from the TypeScript client: the lease lives as long as its Claim stream (SPEC P8) — or, for a
 * claim asked with `holdMs`, as long as the claim, across broken streams (SPEC S3). `openLease` sends the
 * ask and resolves once Granted (calling `onQueued` for each Queued); `release()` — or leaving an
 * `await using` block — sends Release and waits for Released.
 *
 * A lease with a hold whose stream breaks (UNAVAILABLE: a server restart, a cut link; not its worker
 * gone) takes the claim back by itself on a new stream (claim-resume.ts) for up to its hold: the same
 * Lease, claim id and allocation, told through `onResuming` / `onResumed`. When it cannot, `signal`
 * aborts with ClaimLost and `release()` throws it.
 *
 * A preempted lease (SPEC Q2) hears `onPreempting`; by default (`onPreempt: 'requeue'`) the claim then waits again
 * at its place once given back — at the grace's end, or at once with `makeRoom()` — and the same Lease is granted
 * again on the same stream: `onRequeued` (the Queued), then `onRegranted` (the new Granted: new claim id, allocation),
 * `granted()` resolving once it holds again. With `onPreempt: 'cancel'` the grace's end aborts `signal` with Preempted.
 */
import type {
  ClaimRequest,
  ClaimResponse,
  Granted,
  Preempting,
  Queued,
} from '../../generated/ts/berth/v1/placement.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { type ClaimCall, type OpenClaim, openClaim } from './claim-open.js';
import { takeBack } from './claim-resume.js';
import type { Connection } from './connection.js';
import { BerthError, ClaimLost, type ErrorContext, fromServiceError } from './errors.js';
import { claimWorthResuming } from './resume.js';

/** Options of `claim()` / `acquire()` / `withClaim()`. */
export interface ClaimOptions {
  /** Aborting it before the grant abandons the claim (rejects with `signal.reason`); after, it does nothing. */
  signal?: AbortSignal;
  /** Bound on the wait for the grant, in ms (NodeTimeout); absent = waits as long as it takes. */
  timeoutMs?: number;
  /** Called with each Queued (SPEC P6: why the claim waits, e.g. "2 cpu(s)"). */
  onQueued?: (reason: Queued) => void;
  /** With `ask.holdMs`: called when the claim's stream broke and the lease starts taking it back (the error). */
  onResuming?: (error: unknown) => void;
  /** With `ask.holdMs`: called once the claim was taken back on a new stream (its Granted, `resumed` true). */
  onResumed?: (grant: Granted) => void;
  /**
   * Called once if a higher-priority claim preempts this one (SPEC Q2): checkpoint, then `release()` within
   * `notice.graceMs`, after which berth releases it (`signal` aborts with Preempted). Also kept as `lease.preempted`.
   */
  onPreempting?: (notice: Preempting) => void;
  /** Called when the preempted claim waits again at its place (SPEC Q2 requeue): the Queued, `requeued` set. */
  onRequeued?: (queued: Queued) => void;
  /** Called when the requeued claim is granted again: the new Granted (`lease.grant` is it from now on). */
  onRegranted?: (grant: Granted) => void;
}

/** What a lease needs to take its claim back: where, for how long (ms, 0 = never), the error context, the hooks. */
interface ResumeWith {
  conn: Connection;
  holdMs: number;
  ctx: ErrorContext;
  o: ClaimOptions;
}

const RELEASE: ClaimRequest = { kind: { $case: 'release', value: {} } };
const MAKE_ROOM: ClaimRequest = { kind: { $case: 'release', value: { requeue: true } } };

/** Calls a user's hook; what it throws must not end the lease, and is shown as a process warning instead. */
function tell<T>(hook: ((x: T) => void) | undefined, x: T): void {
  try {
    hook?.(x);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    process.emitWarning(`a lease's onResuming/onResumed/onPreempting/onRequeued/onRegranted hook threw: ${why}`);
  }
}

/** A held claim: its Granted and the fields engines read most, `release()`, and `await using`. */
export class Lease implements AsyncDisposable {
  /** Aborts (with the mapped BerthError as its reason) when the claim is lost other than by `release()`. */
  readonly signal: AbortSignal;
  #call: ClaimCall;
  #messages: AsyncIterator<ClaimResponse>;
  #broken = false;
  #releasing = false;
  #resumes = 0;
  readonly #lostCtl = new AbortController();
  #released?: Promise<void>;
  readonly #ended: Promise<void>;
  readonly #resume: ResumeWith;
  #grant: Granted;
  /** While the preempted claim waits again (SPEC Q2 requeue): resolves with its next Granted. */
  #waiting?: { granted: Promise<Granted>; resolve(g: Granted): void; reject(e: unknown): void };

  /** Made by `openLease` once granted; `resume.holdMs` > 0 resumes a broken stream on `resume.conn`. */
  constructor(grant: Granted, open: OpenClaim, resume: ResumeWith) {
    this.#grant = grant;
    this.#resume = resume;
    this.#call = open.call;
    this.#messages = open.messages;
    this.signal = this.#lostCtl.signal;
    this.#ended = this.#watch();
  }

  /** The claim's Granted: after a requeue (SPEC Q2), the latest one. */
  get grant(): Granted {
    return this.#grant;
  }
  /** The Queued of a preempted claim waiting again at its place (SPEC Q2 requeue); undefined while it holds. */
  get requeued(): Queued | undefined {
    return this.#requeued;
  }
  #requeued?: Queued;

  /**
   * Resolves with the Granted the lease holds: at once while it holds one no preemption notice has doomed; after a
   * notice (SPEC Q2), once the claim was given back and granted again. Rejects with `signal.reason` if the lease is
   * lost meanwhile (with `onPreempt: 'cancel'`, at the grace's end), or with a BerthError once `release()` gave it up
   * while it waited again.
   */
  granted(): Promise<Granted> {
    if (this.signal.aborted) return Promise.reject(this.signal.reason);
    if (!this.#waiting) return Promise.resolve(this.#grant);
    const lost = new Promise<never>((_, reject) =>
      this.signal.addEventListener('abort', () => reject(this.signal.reason), { once: true }),
    );
    lost.catch(() => {});
    return Promise.race([this.#waiting.granted, lost]);
  }

  /**
   * After the preemption notice (SPEC Q2): gives the room back now rather than at the grace's end, and waits again at
   * the claim's place (Release with requeue). The server refuses it (the lease is lost, InvalidAsk naming
   * release.requeue) when the claim heard no notice or asked `onPreempt: 'cancel'`.
   */
  makeRoom(): void {
    if (!this.signal.aborted && !this.#broken) this.#call.write(MAKE_ROOM);
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
  /** The preemption notice (SPEC Q2), once a higher-priority claim needs this claim's room; undefined until then. */
  preempted?: Preempting;

  /** How many times the claim was taken back after its stream broke (SPEC S3). */
  get resumes(): number {
    return this.#resumes;
  }

  /** Reads the stream after the grant: Released ends it; a break is resumed (with a hold) or the claim lost. */
  async #watch(): Promise<void> {
    for (;;) {
      try {
        const r = await this.#messages.next();
        if (r.done) {
          if (this.#releasing && this.#waiting) return; // released while waiting again: nothing was held
          return this.#lost(new BerthError(`claim ${this.claimId}: the server ended its stream`));
        }
        if (r.value.kind?.$case === 'released') return;
        if (r.value.kind?.$case === 'preempting') {
          this.preempted = r.value.kind.value;
          this.#goingAway(); // the grant is doomed: granted() waits for the next one (or the loss)
          tell(this.#resume.o.onPreempting, this.preempted);
        }
        if (r.value.kind?.$case === 'queued' && r.value.kind.value.requeued) this.#waitAgain(r.value.kind.value);
        if (r.value.kind?.$case === 'granted') this.#regranted(r.value.kind.value);
      } catch (e) {
        const mapped = fromServiceError(e, this.#resume.ctx);
        if (!(this.#resume.holdMs > 0 && claimWorthResuming(mapped))) return this.#lost(mapped);
        const releasedBefore = this.#releasing; // Release sent, then the break: it may be given back already
        this.#broken = true;
        tell(this.#resume.o.onResuming, mapped);
        try {
          const open = await takeBack(this.#resume.conn, this.grant, this.#resume.holdMs, this.#resume.ctx);
          [this.#call, this.#messages, this.#broken] = [open.call, open.messages, false];
          this.#resumes++;
          if (this.#releasing) this.#call.write(RELEASE);
          tell(this.#resume.o.onResumed, open.grant);
        } catch (lost) {
          return releasedBefore && lost instanceof ClaimLost ? undefined : this.#lost(lost);
        }
      }
    }
  }

  /** The preempted claim waits again at its place (SPEC Q2): the first requeued Queued starts the wait. */
  #waitAgain(q: Queued): void {
    this.#requeued = q;
    this.#goingAway();
    tell(this.#resume.o.onRequeued, q);
  }

  /** From a preemption notice on, `granted()` waits for the next grant. */
  #goingAway(): void {
    if (this.#waiting) return;
    let resolve!: (g: Granted) => void;
    let reject!: (e: unknown) => void;
    const granted = new Promise<Granted>((res, rej) => ((resolve = res), (reject = rej)));
    granted.catch(() => {}); // read only by granted()
    this.#waiting = { granted, resolve, reject };
  }

  /** The requeued claim is granted again: the lease holds the new grant from now on. */
  #regranted(g: Granted): void {
    this.#grant = g;
    this.#requeued = undefined;
    this.preempted = undefined;
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.resolve(g);
    tell(this.#resume.o.onRegranted, g);
  }

  #lost(e: unknown): void {
    this.#lostCtl.abort(e);
  }

  /**
   * Sends Release and waits for Released (through a resume, when the stream breaks meanwhile); the same
   * promise every time (idempotent).
   * @throws the mapped BerthError (e.g. WorkerGone, ClaimLost) when the claim was lost; it is given back either way.
   */
  release(): Promise<void> {
    this.#released ??= (async () => {
      if (this.signal.aborted) {
        this.#call.cancel();
        throw this.signal.reason;
      }
      this.#releasing = true;
      if (!this.#broken) this.#call.write(RELEASE); // else sent on the resumed stream
      await this.#ended; // Released, then the server closes the stream
      this.#call.end();
      // released while it waited again: nothing will be granted, and granted() says so
      this.#waiting?.reject(new BerthError(`claim ${this.claimId}: released while it waited again`));
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
 * Opens a Claim stream with `first` (openClaim) and resolves with the Lease once Granted; a lease with
 * `holdMs` > 0 resumes its broken streams for that long.
 * @throws NoWorker, Oversize, InvalidAsk, Unavailable, ...; NodeTimeout after `timeoutMs`; `signal.reason` on abort.
 */
export async function openLease(
  conn: Connection,
  first: ClaimRequest,
  o: ClaimOptions,
  ctx: ErrorContext,
  what: string,
  holdMs = 0,
): Promise<Lease> {
  const open = await openClaim(conn, first, o, ctx, what);
  return new Lease(open.grant, open, { conn, holdMs, ctx, o });
}
