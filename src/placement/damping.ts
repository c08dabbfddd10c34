/**
 * Preemption damping (SPEC Q2, issue 22 item 2): the same work — one owner's node of one run, which a Run retried
 * after preemption or an engine claiming again asks as a new claim — is preempted at most `limit` times per
 * `windowMs`; past that its claims are not victims until the oldest of those preemptions leaves the window, so two
 * priorities cannot evict each other's work back and forth without end (kueue#2821, k8s#130429). A claim with no run
 * id is its own work (a node name alone is only a label), and so is every claim it becomes by waiting again
 * (requeue.ts). Memory: one entry
 * per work preempted within the window.
 */
import type { Held } from './state.js';

/** When each work was preempted within the window, by work. */
export class Damping {
  readonly #times = new Map<string, number[]>();

  /**
   * @param limit preemptions of one work per window (≥ 1)
   * @param windowMs the window's length in ms
   */
  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** True when `h`'s work was preempted `limit` times within the window: it is not a victim now. */
  exhausted(h: Held, now = Date.now()): boolean {
    const key = workOf(h);
    const times = this.#recent(key, now);
    return times !== undefined && times.length >= this.limit;
  }

  /** `h` is told to make room now: one more preemption of its work. */
  record(h: Held, now = Date.now()): void {
    const key = workOf(h);
    const times = this.#recent(key, now) ?? [];
    times.push(now);
    this.#times.set(key, times);
    if (this.#times.size > 1024) for (const k of [...this.#times.keys()]) this.#recent(k, now); // drop old works
  }

  /** The times of `key` still in the window (entries left with none are dropped). */
  #recent(key: string, now: number): number[] | undefined {
    const times = this.#times.get(key);
    if (!times) return undefined;
    while (times.length && times[0] <= now - this.windowMs) times.shift();
    if (times.length === 0) this.#times.delete(key);
    return times.length ? times : undefined;
  }
}

/** The work a held claim does: its owner, run id and node; without a run, the claim it first was. */
function workOf(h: Held): string {
  const a = h.grant.ask;
  // without a run a node name is only a label: the claim is its own work, and stays so when it waits again
  if (!a.runId) return a.requeuedFrom ?? h.grant.claimId;
  return `${a.owner ?? ''}\u0000${a.runId}\u0000${a.node}`;
}
