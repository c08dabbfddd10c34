/**
 * Levels: items filed under numeric keys, the distinct keys kept sorted, so "the items from key x up" (or down)
 * starts with a binary search, not a walk of every item. The placement indexes use it inside a capacity bucket
 * (capacity.ts): machines by free memory, and machines by the units held on their shared GPUs (issue 23 item 5,
 * SPEC P12). Adding and removing are O(1) but for a key new to (or gone from) the sorted list.
 */
export class Levels<T> {
  readonly #at = new Map<number, Set<T>>();
  /** Non-empty keys, ascending. */
  readonly #keys: number[] = [];

  /** Files `item` under `key` (an item may sit under several keys). */
  add(key: number, item: T): void {
    let set = this.#at.get(key);
    if (!set) {
      this.#at.set(key, (set = new Set()));
      this.#keys.splice(this.#lowerBound(key), 0, key);
    }
    set.add(item);
  }

  /** Takes `item` from under `key` (nothing when it is not there). */
  delete(key: number, item: T): void {
    const set = this.#at.get(key);
    if (!set?.delete(item) || set.size > 0) return;
    this.#at.delete(key);
    this.#keys.splice(this.#lowerBound(key), 1);
  }

  /** True when nothing is filed. */
  get empty(): boolean {
    return this.#keys.length === 0;
  }

  /** The items under keys ≥ `min`, lowest key first. */
  *upFrom(min: number): Generator<T> {
    for (let i = this.#lowerBound(min); i < this.#keys.length; i++) yield* this.#at.get(this.#keys[i])!;
  }

  /** The items under keys ≤ `max`, highest key first, each with its key. */
  *downFrom(max: number): Generator<[number, T]> {
    let i = this.#lowerBound(max);
    if (i === this.#keys.length || this.#keys[i] > max) i--;
    for (; i >= 0; i--) {
      const k = this.#keys[i];
      for (const item of this.#at.get(k)!) yield [k, item];
    }
  }

  /** The index of the first key ≥ `key`. */
  #lowerBound(key: number): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#keys[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
