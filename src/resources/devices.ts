/**
 * DevicePool: which device ids of one machine are free, and which to hand out. Used by the
 * books (SPEC P8, P9) and by `berth dispatch` (SPEC D3, D4). An id is free (nothing held), held whole, or
 * shared: held in shares of 1e-4 (issue 23 item 3, SPEC P14), never whole and shared at once, never over 1.
 */
import { UNIT } from './quantity.js';

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
  /** Shared ids → units of 1e-4 held in shares (1..UNIT); such an id is not free. */
  readonly #shared = new Map<number, number>();

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

  /** Units of 1e-4 held in shares of `id` (0 when free or held whole). */
  sharedOf(id: number): number {
    return this.#shared.get(id) ?? 0;
  }

  /** The units held on each shared id, in no order (no copy: for the placement indexes). */
  sharedUnits(): IterableIterator<number> {
    return this.#shared.values();
  }

  /** The shared ids and the units each holds, sorted by id. */
  shared(): [number, number][] {
    return [...this.#shared].sort((a, b) => a[0] - b[0]);
  }

  /** The most a share could take of one id now, in units: UNIT when an id is free, else the roomiest shared id. */
  shareRoom(): number {
    if (this.#free.size > 0) return UNIT;
    let room = 0;
    for (const used of this.#shared.values()) room = Math.max(room, UNIT - used);
    return room;
  }

  /**
   * Room for shares over every id not held whole, in units (free ids count UNIT each): what reservations of
   * shares are measured against.
   */
  shareRoomTotal(): number {
    let room = this.#free.size * UNIT;
    for (const used of this.#shared.values()) room += UNIT - used;
    return room;
  }

  /**
   * The id a share of `units` (1..UNIT) would take, without taking it: best fit, the shared id it leaves the least
   * room on (lowest id on ties), else the lowest free id. Undefined when no id has the room.
   */
  pickShare(units: number): number | undefined {
    let best: number | undefined;
    let left = UNIT;
    for (const [id, used] of this.#shared) {
      const l = UNIT - used - units;
      if (l >= 0 && (best === undefined || l < left || (l === left && id < best))) {
        best = id;
        left = l;
      }
    }
    if (best !== undefined) return best;
    for (const id of this.#all) if (this.#free.has(id)) return id;
    return undefined;
  }

  /** Takes `units` of `id` as a share. @throws DeviceAccountingError when it is held whole or lacks the room. */
  takeShare(id: number, units: number): void {
    const used = this.#shared.get(id) ?? 0;
    if (!Number.isInteger(units) || units <= 0 || units > UNIT)
      throw new DeviceAccountingError(`device ${id}: share ${units} outside 1..${UNIT}`);
    if (used === 0 && !this.#free.has(id)) throw new DeviceAccountingError(`device ${id} is not free`);
    if (used + units > UNIT) throw new DeviceAccountingError(`device ${id}: ${units} more of ${UNIT - used} left`);
    this.#free.delete(id);
    this.#shared.set(id, used + units);
  }

  /** Gives `units` of `id` back; the id is free again when no share is left. @throws when not held so. */
  giveShare(id: number, units: number): void {
    const used = this.#shared.get(id) ?? 0;
    if (units <= 0 || units > used) throw new DeviceAccountingError(`device ${id}: share ${units} is not held`);
    if (used === units) {
      this.#shared.delete(id);
      this.#free.add(id);
    } else this.#shared.set(id, used - units);
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
      if (!this.#all.includes(id) || this.#free.has(id) || this.#shared.has(id))
        throw new DeviceAccountingError(`device ${id} is not held`);
    }
    for (const id of ids) this.#free.add(id);
  }
}
