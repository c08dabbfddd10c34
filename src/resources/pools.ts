/**
 * Cluster-wide pools (issue 23 item 1): named counters not tied to a machine, such as software licenses
 * (`pools: {"license/matlab": 30}` in the config). A claim asking one takes it atomically with its machine's
 * resources and gives it back with them. Quantities in units of 1e-4 (quantity.ts). Same invariants as a
 * machine's books (SPEC P8): free within [0, total], held = the sum of the claims' holdings.
 */
import { BooksError } from './books.js';
import type { Named } from './quantity.js';

/** The books of every pool. */
export class PoolBooks {
  readonly total: Readonly<Named>;
  readonly #free: Named;
  readonly #held = new Map<string, Named>();

  /** @param total pool name → its size in units. */
  constructor(total: Named = {}) {
    this.total = { ...total };
    this.#free = { ...total };
  }

  /** True when `name` is a pool. */
  has(name: string): boolean {
    return Object.hasOwn(this.total, name);
  }

  /** True when there are no pools. */
  get empty(): boolean {
    return Object.keys(this.total).length === 0;
  }

  /** Free units of pool `name` (0 for an unknown name). */
  freeOf(name: string): number {
    return this.#free[name] ?? 0;
  }

  /** True when every quantity of `want` fits the free pools minus `reserved` (units, held back for older waiters). */
  fits(want: Named, reserved?: Named): boolean {
    for (const k in want) if (want[k] > (this.#free[k] ?? 0) - (reserved?.[k] ?? 0)) return false;
    return true;
  }

  /** True when every quantity of `want` fits the pools' totals. */
  canEverHold(want: Named): boolean {
    for (const k in want) if (want[k] > (this.total[k] ?? 0)) return false;
    return true;
  }

  /** Takes `want` for `claimId`. @throws BooksError when it does not fit or the claim holds some already. */
  take(claimId: string, want: Named): void {
    if (this.#held.has(claimId)) throw new BooksError(`claim ${claimId} already holds pools`);
    if (!this.fits(want)) throw new BooksError(`claim ${claimId}: pools not free`);
    for (const k in want) this.#free[k] -= want[k];
    this.#held.set(claimId, { ...want });
  }

  /** Gives back what `claimId` holds; returns the names given (empty when it held none). Idempotent. */
  give(claimId: string): string[] {
    const h = this.#held.get(claimId);
    if (!h) return [];
    this.#held.delete(claimId);
    for (const k in h) this.#free[k] += h[k];
    return Object.keys(h);
  }

  /** Checks free within [0, total] and held + free = total per pool. @throws BooksError naming the pool. */
  check(): void {
    const held: Named = {};
    for (const h of this.#held.values()) for (const k in h) held[k] = (held[k] ?? 0) + h[k];
    for (const k in this.total) {
      const f = this.#free[k];
      if (f < 0 || f > this.total[k]) throw new BooksError(`pool ${k}: free ${f} outside [0, ${this.total[k]}]`);
      if ((held[k] ?? 0) + f !== this.total[k])
        throw new BooksError(`pool ${k}: held ${held[k] ?? 0} + free ${f} ≠ ${this.total[k]}`);
    }
  }

  /** Every pool: name, total and free, in units. */
  views(): { name: string; total: number; free: number }[] {
    return Object.keys(this.total).map((name) => ({ name, total: this.total[name], free: this.#free[name] }));
  }
}
