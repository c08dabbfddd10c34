/**
 * Cluster-wide pools (issue 23 item 1): named counters not tied to a machine, such as software licenses
 * (`pools: {"license/matlab": 30}` in the config). A claim asking one takes it atomically with its machine's
 * resources and gives it back with them. Quantities in units of 1e-4 (quantity.ts). Same invariants as a
 * machine's books (SPEC P8): free within [0, total], held = the sum of the claims' holdings. A pool resized below
 * what is held (`resize`, a config reload) revokes nothing: its free is 0 until enough is given back.
 */
import { BooksError } from './books.js';
import type { Named } from './quantity.js';

/** The books of every pool. */
export class PoolBooks {
  readonly #total: Named;
  /** Total minus held, per pool; below 0 while a pool resized under what is held (`resize`). */
  readonly #free: Named;
  readonly #held = new Map<string, Named>();

  /** @param total pool name → its size in units. */
  constructor(total: Named = {}) {
    this.#total = { ...total };
    this.#free = { ...total };
  }

  /** Pool name → its size in units. */
  get total(): Readonly<Named> {
    return this.#total;
  }

  /**
   * Pool `name` now holds `total` units (a config reload). Growing frees the difference; shrinking below what is
   * held revokes no claim, it only keeps free at 0 until enough comes back. @throws BooksError for an unknown name
   * or a total that is not a whole number of units ≥ 0 (a bug of the caller: the config is validated before).
   */
  resize(name: string, total: number): void {
    if (!this.has(name)) throw new BooksError(`pool ${name}: no such pool to resize`);
    if (!Number.isSafeInteger(total) || total < 0) throw new BooksError(`pool ${name}: bad total ${total}`);
    this.#free[name] += total - this.#total[name];
    this.#total[name] = total;
  }

  /** True when `name` is a pool. */
  has(name: string): boolean {
    return Object.hasOwn(this.total, name);
  }

  /** True when there are no pools. */
  get empty(): boolean {
    return Object.keys(this.total).length === 0;
  }

  /** Free units of pool `name` (0 for an unknown name, or one resized below what is held). */
  freeOf(name: string): number {
    return Math.max(0, this.#free[name] ?? 0);
  }

  /** Units of pool `name` held by claims now. */
  heldOf(name: string): number {
    return (this.#total[name] ?? 0) - (this.#free[name] ?? 0);
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

  /**
   * Checks free ≤ total and held + free = total per pool (free is below 0 only while the claims hold more than a
   * total resized under them; `take` never takes past free). @throws BooksError naming the pool.
   */
  check(): void {
    const held: Named = {};
    for (const h of this.#held.values()) for (const k in h) held[k] = (held[k] ?? 0) + h[k];
    for (const k in this.#total) {
      const f = this.#free[k];
      const t = this.#total[k];
      if (f > t) throw new BooksError(`pool ${k}: free ${f} above its total ${t}`);
      if ((held[k] ?? 0) + f !== t) throw new BooksError(`pool ${k}: held ${held[k] ?? 0} + free ${f} ≠ ${t}`);
    }
  }

  /** Every pool: name, total and free, in units. */
  views(): { name: string; total: number; free: number }[] {
    return Object.keys(this.#total).map((name) => ({ name, total: this.#total[name], free: this.freeOf(name) }));
  }
}
