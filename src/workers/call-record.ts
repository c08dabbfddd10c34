/**
 * CallRecord: one call in flight (remote or on the engine host), fanned out to every Run that
 * follows it (a retried Run with the same call id joins instead of running twice). Every follower
 * gets every event from where it started, in order, then the one terminal (SPEC W2). Events all
 * followers have passed are dropped, except the last MAX_REPLAY kept for a Run that joins late;
 * a follower more than MAX_BEHIND events behind is ended RESOURCE_EXHAUSTED. A record is also a
 * Flow: full while its slowest follower lags FLOW_HIGH events or more, so an engine-host process's
 * output is paused instead of outrunning its callers (a worker's agent has its own Flow).
 * Events are counted by weight: a batch of output lines (`logs`) weighs one per line, so batching
 * changes neither how much is replayed nor when a slow follower pauses the process.
 */
import type { Event, Failure, Result } from '../../generated/ts/berth/v1/calls.js';
import type { WorkerLink } from '../../generated/ts/berth/v1/placement.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { Flow } from './executors/types.js';

/** Most past events replayed to a Run that joins late. */
export const MAX_REPLAY = 10_000;
/** Most events a follower may lag behind before it is cut off as too slow. */
export const MAX_BEHIND = 100_000;

/** Lag of the slowest follower (events) at which the record reports full, and at which it has room again. */
export const FLOW_HIGH = 2000;
export const FLOW_LOW = 500;

/** The one ending of a call: its Result or its Failure. */
export type Terminal = { $case: 'result'; value: Result } | { $case: 'failure'; value: Failure };

/** What a follower receives, in order: events and link changes (SPEC S2), then exactly one terminal. */
export type CallItem = { $case: 'event'; value: Event } | { $case: 'link'; value: WorkerLink } | Terminal;

/** True for the one ending of a call. */
export const isTerminal = (item: CallItem): item is Terminal => item.$case === 'result' || item.$case === 'failure';

/** One call in flight. `stop(reason)` is how it is cancelled on its machine. */
export class CallRecord implements Flow {
  /** When the call first started (ms since the epoch): restored from the journal after a restart. */
  startedAt = Date.now();
  /** Who started it, when client identities are configured (SPEC R7): only it cancels or follows it. */
  owner?: string;
  /** How long the call is held when its worker's link breaks, in ms (0: the server's worker hold; SPEC S2). */
  holdMs = 0;
  /** The newest seq acknowledged to the machine (SPEC S1). */
  ackedSeq = 0;
  #items: CallItem[] = [];
  /** Absolute index of #items[0]. */
  #base = 0;
  /** Cumulative weight: #cum[k] = weight of every item up to and including #items[k], from the call's start. */
  #cum: number[] = [];
  /** Weight of the items dropped before #base. */
  #baseWeight = 0;
  #end?: Terminal | BerthError;
  /** Sequence number of the newest event (SPEC S1): events without one are numbered here, resent ones dropped. */
  #lastSeq = 0;
  /** Seq of the oldest event this record ever had (above 1: restored with only its newest events, SPEC S3). */
  #firstSeq = 1;
  readonly #wakers = new Set<() => void>();
  /** Absolute next index of each follower. */
  readonly #cursors = new Set<{ i: number; seq: number }>();
  readonly #roomWaiters = new Set<() => void>();
  readonly #onEnd: Array<(end: Terminal | BerthError) => void> = [];
  /**
   * Resolves once the call's ending is journaled (SPEC S4): every follower awaits it before it tells its caller.
   * Set by whoever journals the ending, in a `whenEnded` callback; never rejects.
   */
  endingKept: Promise<void> = Promise.resolve();
  #settle!: () => void;
  /** Resolves once the machine is really done with the call (terminal frame, process exit, or worker gone). */
  readonly settled = new Promise<void>((resolve) => (this.#settle = resolve));

  constructor(
    readonly callId: string,
    readonly runId: string,
    readonly machine: string,
    readonly allocation: Allocation,
    readonly stop: (reason: BerthError) => void,
  ) {}

  /** True once the call ended for its callers. */
  get ended(): boolean {
    return this.#end !== undefined;
  }

  /** How the call ended — its Result or Failure, or the RPC error — or undefined while it runs. */
  get ending(): Terminal | BerthError | undefined {
    return this.#end;
  }

  /** Runs following the call now (the first caller and any that joined). */
  get followers(): number {
    return this.#cursors.size;
  }

  /**
   * Flow: true while the call runs and its slowest follower (or, with none yet, the kept backlog) lags FLOW_HIGH events
   * or more.
   */
  full(): boolean {
    return !this.#end && this.#lag() >= FLOW_HIGH;
  }

  /** Flow: resolves once the slowest follower lags at most FLOW_LOW events, or the call ended. */
  room(): Promise<void> {
    if (this.#end || this.#lag() <= FLOW_LOW) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.add(resolve));
  }

  /** Sequence number of the newest event recorded (0 before the first). */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /**
   * Records an event (ignored after the end). An event without a sequence number (the engine host's, an older
   * agent's) is given the next one; one at or below the newest recorded is a resend after a reconnect and is dropped
   * (SPEC S1: nothing repeated).
   */
  event(e: Event): void {
    if (this.#end) return;
    if (!e.seq) e.seq = this.#lastSeq + 1;
    else if (e.seq <= this.#lastSeq) return;
    this.#lastSeq = e.seq;
    this.#push({ $case: 'event', value: e }, e.kind?.$case === 'logs' ? Math.max(1, e.kind.value.lines.length) : 1);
    this.#trim();
    this.#wake();
  }

  /** The events kept now, oldest first (what an ended call's journal record keeps the newest of, SPEC S3). */
  keptEvents(): Event[] {
    return this.#items.flatMap((i) => (i.$case === 'event' ? [i.value] : []));
  }

  /**
   * A call restored ended from the journal (before its ending): `events` are its newest (seq order), `lastSeq` the
   * seq of its newest. A follow from before the first of them is refused (SPEC S3: nothing silently lost).
   */
  restoreEvents(events: readonly Event[], lastSeq: number): void {
    for (const e of events) this.event(e);
    this.#firstSeq = events[0]?.seq ?? lastSeq + 1;
    this.#lastSeq = Math.max(this.#lastSeq, lastSeq);
  }

  /** Tells the followers the link to the call's worker went down or came back (SPEC S2; ignored after the end). */
  link(l: WorkerLink): void {
    if (this.#end) return;
    this.#push({ $case: 'link', value: l }, 1);
    this.#wake();
  }

  /**
   * The newest event sequence number every follower has been handed (written to its stream): what the
   * machine may drop (SPEC S1). Undefined with no follower: nothing new is safe then.
   */
  safeSeq(): number | undefined {
    let min: number | undefined;
    for (const c of this.#cursors) if (min === undefined || c.seq < min) min = c.seq;
    return min;
  }

  /** True once the machine's own Result or Failure is recorded (not an RPC error of the server's). */
  get finished(): boolean {
    return this.#end !== undefined && !(this.#end instanceof BerthError);
  }

  /** How it ended, as the journal records it (SPEC S4): "result", "failure" (the machine's), "error"; "" running. */
  get outcome(): '' | 'result' | 'failure' | 'error' {
    if (this.#end === undefined) return '';
    return this.#end instanceof BerthError ? 'error' : this.#end.$case;
  }

  /**
   * Calls `fn` with the ending as the call ends, synchronously and before any follower sees it (at once when it has
   * ended already): the journal records the ending there, first.
   */
  whenEnded(fn: (end: Terminal | BerthError) => void): void {
    if (this.#end) fn(this.#end);
    else this.#onEnd.push(fn);
  }

  #ended(end: Terminal | BerthError): void {
    for (const fn of this.#onEnd.splice(0)) {
      try {
        fn(end);
      } catch {
        // an observer's failure must not keep the ending from the callers
      }
    }
  }

  /** Ends the call with its Result or Failure (first ending wins). */
  finish(t: Terminal): void {
    if (this.#end) return;
    this.#end = t;
    this.#ended(t);
    this.#push(t, 1);
    this.#wake();
  }

  /** Ends the call with an RPC error for its callers (first ending wins): went away, deadline, cancelled. */
  fail(err: BerthError): void {
    if (this.#end) return;
    this.#end = err;
    this.#ended(err);
    this.#wake();
  }

  /** Marks the machine done with the call. */
  markSettled(): void {
    this.#settle();
  }

  /**
   * Yields every item from the oldest kept (or, with `afterSeq`, from the first event numbered after it: SPEC S3, a
   * caller following the call again), waiting for new ones, until the terminal; throws the BerthError when the call
   * failed, `signal.reason` when the follower goes away, or RESOURCE_EXHAUSTED when it falls MAX_BEHIND events
   * behind. @throws BerthError failed_precondition when events after `afterSeq` are no longer kept.
   */
  async *follow(signal: AbortSignal, afterSeq = 0): AsyncGenerator<CallItem> {
    const cur = { i: afterSeq > 0 ? this.#indexAfter(afterSeq) : this.#base, seq: afterSeq };
    this.#cursors.add(cur);
    try {
      for (;;) {
        while (cur.i < this.#base + this.#items.length) {
          if (this.#weightTo(this.#base + this.#items.length) - this.#weightTo(cur.i) > MAX_BEHIND) {
            throw new BerthError(
              'resource_exhausted',
              `caller too slow: more than ${MAX_BEHIND} events of ${this.callId} behind`,
            );
          }
          const item = this.#items[cur.i - this.#base];
          cur.i++;
          if (this.#roomWaiters.size) this.#wakeRoom();
          // Seen already (an event resent after a restart, recorded after this follower came): skipped (SPEC S3).
          if (afterSeq > 0 && item.$case === 'event' && item.value.seq <= afterSeq) continue;
          yield item;
          if (item.$case === 'event') cur.seq = item.value.seq;
          else if (item.$case !== 'link') return;
        }
        if (this.#end instanceof BerthError) throw this.#end;
        signal.throwIfAborted();
        await new Promise<void>((resolve) => {
          const done = () => {
            this.#wakers.delete(done);
            signal.removeEventListener('abort', done);
            resolve();
          };
          this.#wakers.add(done);
          signal.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      this.#cursors.delete(cur);
      if (this.#roomWaiters.size) this.#wakeRoom();
    }
  }

  /** Absolute index of the first item after event `seq`. @throws when events after it are no longer kept. */
  #indexAfter(seq: number): number {
    let i = this.#base;
    const end = this.#base + this.#items.length;
    while (i < end) {
      const item = this.#items[i - this.#base];
      if (item.$case !== 'event' || item.value.seq > seq) break;
      i++;
    }
    const first = this.#items[0];
    const oldest = first?.$case === 'event' ? first.value.seq : this.#firstSeq;
    if (i === this.#base && oldest > seq + 1 && seq < this.#lastSeq) {
      throw new BerthError(
        'failed_precondition',
        `call ${this.callId}: events after seq ${seq} are no longer kept (the oldest kept is ${oldest})`,
      );
    }
    return i;
  }

  #push(item: CallItem, weight: number): void {
    this.#items.push(item);
    this.#cum.push(this.#weightTo(this.#base + this.#items.length - 1) + weight);
  }

  /** Weight of every item before absolute index `i` (i from #base to the end). */
  #weightTo(i: number): number {
    return i <= this.#base ? this.#baseWeight : this.#cum[i - this.#base - 1];
  }

  /**
   * Drops events every follower has passed, keeping the last MAX_REPLAY by weight (in batches, so pushes stay O(1)
   * amortised).
   */
  #trim(): void {
    const total = this.#base + this.#items.length;
    const keepFrom = this.#weightTo(total) - MAX_REPLAY;
    if (keepFrom <= this.#baseWeight) return;
    let lo = 0; // first item whose cumulative weight exceeds keepFrom: everything before it may go
    let hi = this.#cum.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#cum[mid] <= keepFrom) lo = mid + 1;
      else hi = mid;
    }
    let upTo = this.#base + lo;
    for (const c of this.#cursors) upTo = Math.min(upTo, c.i);
    const drop = upTo - this.#base;
    if (drop < 1024) return;
    this.#baseWeight = this.#weightTo(upTo);
    this.#items = this.#items.slice(drop);
    this.#cum = this.#cum.slice(drop);
    this.#base += drop;
  }

  #wake(): void {
    for (const w of [...this.#wakers]) w();
    if (this.#end) this.#wakeRoom();
  }

  /** Weight of the events between the slowest follower and the newest; with no follower, of every kept event. */
  #lag(): number {
    const total = this.#base + this.#items.length;
    let slowest = this.#cursors.size ? total : this.#base;
    for (const c of this.#cursors) slowest = Math.min(slowest, c.i);
    return this.#weightTo(total) - this.#weightTo(slowest);
  }

  /** Wakes output readers waiting for room once the lag is down to FLOW_LOW (or the call ended). */
  #wakeRoom(): void {
    if (!this.#end && this.#lag() > FLOW_LOW) return;
    for (const w of [...this.#roomWaiters]) w();
    this.#roomWaiters.clear();
  }
}
