/**
 * The server lifecycle: starting → serving → draining → stopped (SPEC R3). One place that knows
 * the state; `drain` is an AbortSignal that streams follow to end themselves.
 */

export type LifecycleState = 'starting' | 'serving' | 'draining' | 'stopped';

const NEXT: Record<LifecycleState, LifecycleState[]> = {
  starting: ['serving', 'draining', 'stopped'],
  serving: ['draining'],
  draining: ['stopped'],
  stopped: [],
};

/** Tracks the state and notifies listeners on each transition. */
export class Lifecycle {
  #state: LifecycleState = 'starting';
  readonly #drain = new AbortController();
  readonly #listeners = new Set<(s: LifecycleState) => void>();

  /** Current state. */
  get state(): LifecycleState {
    return this.#state;
  }

  /** Aborted on entering `draining` (or `stopped` straight from `starting`). */
  get drain(): AbortSignal {
    return this.#drain.signal;
  }

  /** Moves to `next`; returns false (and changes nothing) when the move is not allowed. */
  to(next: LifecycleState): boolean {
    if (!NEXT[this.#state].includes(next)) return false;
    this.#state = next;
    if (next === 'draining' || next === 'stopped') this.#drain.abort();
    for (const l of this.#listeners) l(next);
    return true;
  }

  /** Calls `fn` on every transition; returns an unsubscribe function. */
  onChange(fn: (s: LifecycleState) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
