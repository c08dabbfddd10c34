/**
 * LiveCalls: the one registry of RPCs in progress that the drain walks (SPEC R3). Each call has
 * at most one AbortController (its CallScope's, made when first read); the drain aborts the calls
 * that follow it, instead of every stream adding a listener to a shared drain signal (issue 9: no
 * MaxListenersExceededWarning with 1,000 open streams, no per-message AbortSignal.any). Calls
 * *kept* through the drain (a held lease, a running call) get the grace; the server waits for them
 * with `idle()`. Calls that *linger* (event watchers) are neither ended by the drain nor waited
 * for: `abortAll` ends them.
 */
import { BerthError } from '../errors.js';

const noop = () => undefined;

/** Why a call that follows the drain ends (UNAVAILABLE, SPEC R3). */
export const DRAINING = 'server is draining';

const halts = new WeakSet<object>();

/**
 * Why every call in progress ends when the server stops without draining (UNAVAILABLE, SPEC S5): the server going,
 * not the caller leaving — `isHalt` tells it apart, so that no call is stopped, failed or journaled for it.
 */
export function haltReason(): BerthError {
  const reason = new BerthError('unavailable', 'server is stopping; it will be back');
  halts.add(reason);
  return reason;
}

/** True when `reason` (an aborted signal's) is the server's own halt (`haltReason`), not its caller leaving. */
export function isHalt(reason: unknown): boolean {
  return typeof reason === 'object' && reason !== null && halts.has(reason);
}

/**
 * How a call meets the drain: ended at once (`follows`), given the grace (`kept`), or ended with
 * the rest once the drain is over (`lingers`).
 */
export type DrainMode = 'follows' | 'kept' | 'lingers';

/**
 * One call's signal and its place in the registry. `abort` ends the signal (first reason wins);
 * `keepThroughDrain` lets the call run through the drain's grace (SPEC R3: in-flight work);
 * `close` leaves the registry once the handler is done.
 */
export class CallScope {
  /** Made on first read of `signal` (issue 9: a Claim granted at once never needs one). */
  #ac?: AbortController;
  #aborted = false;
  #reason: unknown;
  #listeners?: Array<() => void>;
  #kept: boolean;
  #closed = false;
  /** Not ended by the drain, not waited for (see DrainMode). */
  readonly lingers: boolean;

  constructor(
    readonly live: LiveCalls | undefined,
    mode: DrainMode = 'follows',
  ) {
    this.#kept = mode === 'kept';
    this.lingers = mode === 'lingers';
  }

  /**
   * Aborted when the client cancels, disconnects or half-closes (when asked), or the drain ends it.
   * The call's one AbortController, made on first read (already aborted if the scope is).
   */
  get signal(): AbortSignal {
    if (!this.#ac) {
      this.#ac = new AbortController();
      if (this.#aborted) this.#ac.abort(this.#reason);
    }
    return this.#ac.signal;
  }

  /** True once ended (as `signal.aborted`, without making the signal). */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Why it ended (as `signal.reason`); undefined while it runs. */
  get reason(): unknown {
    return this.#reason;
  }

  /**
   * Calls `fn` once when the scope ends (before the signal's listeners), unless unsubscribed with
   * the function returned: a listener without an AbortController. Not called if already ended.
   */
  onAbort(fn: () => void): () => void {
    if (this.#aborted) return noop;
    (this.#listeners ??= []).push(fn);
    return () => {
      const i = this.#listeners?.indexOf(fn) ?? -1;
      if (i >= 0) this.#listeners?.splice(i, 1);
    };
  }

  /** True once kept through the drain. */
  get kept(): boolean {
    return this.#kept;
  }

  /** Ends the scope and its signal with `reason` unless it already ended. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const fn of listeners) fn();
    this.#ac?.abort(reason);
  }

  /** From now on the drain does not end this call: it gets the grace, then `abortKept` ends it. */
  keepThroughDrain(): void {
    if (this.#kept) return;
    this.#kept = true;
    this.live?.kept(this);
  }

  /** True once the handler is done (`close`): nothing listens to the signal any more. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The handler is done: leave the registry. Idempotent. */
  close(): void {
    this.#closed = true;
    this.live?.delete(this);
  }
}

/** The calls in progress on one server. */
export class LiveCalls {
  readonly #calls = new Set<CallScope>();
  #kept = 0;
  #draining = false;
  #onIdle: Array<() => void> = [];
  readonly #onDrain = new Set<() => void>();

  /** True once `drain()` was called. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Calls in progress (kept or not). */
  get size(): number {
    return this.#calls.size;
  }

  /** Calls kept through the drain still in progress. */
  get keptCount(): number {
    return this.#kept;
  }

  /** Registers a new call; while draining, a call that is not kept ends at once UNAVAILABLE "server is draining". */
  add(scope: CallScope): void {
    if (this.#draining && !scope.kept && !scope.lingers) {
      scope.abort(new BerthError('unavailable', DRAINING));
      return;
    }
    this.#calls.add(scope);
    if (scope.kept) this.#kept++;
  }

  /** `scope` became kept (called by CallScope.keepThroughDrain). */
  kept(scope: CallScope): void {
    if (this.#calls.has(scope)) this.#kept++;
  }

  /** `scope` is over. */
  delete(scope: CallScope): void {
    if (!this.#calls.delete(scope)) return;
    if (scope.kept && --this.#kept === 0) this.#wakeIdle();
  }

  /**
   * Calls `fn` when the drain starts (at once if it has): for the few long-lived streams that
   * handle the drain themselves (worker streams are sent Drain). Returns an unsubscribe function.
   */
  onDrain(fn: () => void): () => void {
    if (this.#draining) {
      fn();
      return () => undefined;
    }
    this.#onDrain.add(fn);
    return () => this.#onDrain.delete(fn);
  }

  /**
   * The server stops without draining (SPEC S5): the streams that handle the drain themselves are not told (no
   * Drain frame reaches a worker); `drain()` then only ends the calls.
   */
  halt(): void {
    this.#onDrain.clear();
  }

  /** Starts the drain: every call not kept ends UNAVAILABLE "server is draining" (SPEC R3). Idempotent. */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    for (const fn of this.#onDrain) fn();
    this.#onDrain.clear();
    const reason = new BerthError('unavailable', DRAINING);
    for (const scope of this.#calls) {
      if (scope.kept || scope.lingers) continue;
      this.#calls.delete(scope);
      scope.abort(reason);
    }
  }

  /** Ends every call still in progress with `reason` (the drain is over: kept calls done or out of grace). */
  abortAll(reason: BerthError): void {
    for (const scope of this.#calls) scope.abort(reason);
  }

  /** Resolves true once no kept call is in progress, or false after `ms` (the grace). */
  idle(ms: number): Promise<boolean> {
    if (this.#kept === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#onIdle = this.#onIdle.filter((f) => f !== done);
        resolve(false);
      }, ms);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#onIdle.push(done);
    });
  }

  #wakeIdle(): void {
    const waiting = this.#onIdle;
    this.#onIdle = [];
    for (const f of waiting) f();
  }
}
