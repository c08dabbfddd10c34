/**
 * The server lifecycle: starting → serving → draining → stopped (SPEC R3). One place that knows
 * the state, and `live`, the registry of calls in progress that the drain walks.
 */
import { LiveCalls } from './live-calls.js';

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
  /** Calls in progress; entering `draining` ends those not kept through the drain. */
  readonly live = new LiveCalls();
  readonly #listeners = new Set<(s: LifecycleState) => void>();

  /** Current state. */
  get state(): LifecycleState {
    return this.#state;
  }

  /** Moves to `next`; returns false (and changes nothing) when the move is not allowed. */
  to(next: LifecycleState): boolean {
    if (!NEXT[this.#state].includes(next)) return false;
    this.#state = next;
    if (next === 'draining' || next === 'stopped') this.live.drain();
    for (const l of this.#listeners) l(next);
    return true;
  }

  /** Calls `fn` on every transition; returns an unsubscribe function. */
  onChange(fn: (s: LifecycleState) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}
