/**
 * DevicePool: which device ids of one machine are free, and which to hand out. Used by the
 * books (SPEC P8, P9) and by `berth dispatch` (SPEC D3, D4).
 */

/** Thrown when ids are taken twice or given back without being held: a books bug, never input. */
export class DeviceAccountingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceAccountingError';
  }
}

/** The free/held state of a fixed set of device ids. */
export class DevicePool {
  readonly #all: readonly number[];
  readonly #free = new Set<number>();

  /** @param ids every device id of the machine (duplicates ignored). */
  constructor(ids: Iterable<number>) {
    this.#all = [...new Set(ids)].sort((a, b) => a - b);
    for (const id of this.#all) this.#free.add(id);
  }

  /** Every id, sorted. */
  get all(): readonly number[] {
    return this.#all;
  }

  /** Number of ids. */
  get size(): number {
    return this.#all.length;
  }

  /** Number of free ids. */
  get freeCount(): number {
    return this.#free.size;
  }

  /** Free ids, sorted. */
  freeIds(): number[] {
    return this.#all.filter((id) => this.#free.has(id));
  }

  /**
   * Picks `n` free ids without taking them: the lowest run of consecutive ids that fits, else
   * the lowest free ids. Returns undefined when fewer than `n` are free; [] for n = 0.
   */
  pick(n: number): number[] | undefined {
    if (n === 0) return [];
    if (n > this.#free.size) return undefined;
    const free = this.freeIds();
    for (let i = 0; i + n <= free.length; i++) {
      if (free[i + n - 1] - free[i] === n - 1) return free.slice(i, i + n);
    }
    return free.slice(0, n);
  }

  /** Takes exactly `ids`. @throws DeviceAccountingError if one is unknown or already held. */
  take(ids: readonly number[]): void {
    for (const id of ids) {
      if (!this.#free.has(id)) throw new DeviceAccountingError(`device ${id} is not free`);
    }
    for (const id of ids) this.#free.delete(id);
  }

  /** Gives `ids` back. @throws DeviceAccountingError if one is unknown or already free. */
  give(ids: readonly number[]): void {
    for (const id of ids) {
      if (!this.#all.includes(id) || this.#free.has(id)) throw new DeviceAccountingError(`device ${id} is not held`);
    }
    for (const id of ids) this.#free.add(id);
  }
}
