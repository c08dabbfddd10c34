/**
 * The machines whose books berth keeps (SPEC P1), the engine first. Indexed so a decision does
 * not scan every machine when there are thousands: by free capacity (free GPUs → free cores →
 * machines, walked in best-fit order), by label, and by shape (distinct totals) for "could any
 * machine ever hold this".
 */
import { ResourceAccountant, type Amount } from '../resources/books.js';
import type { MachineSpec } from './types.js';

/** One machine: its spec and its books. */
export interface MachineEntry {
  spec: MachineSpec;
  books: ResourceAccountant;
  attachedAt: number;
}

/** A distinct machine shape (total inventory and labels) and how many machines have it. */
interface Shape {
  cpus: number;
  gpus: number;
  ramMb?: number;
  labels: string[];
  count: number;
}

const shapeKey = (s: MachineSpec) => `${s.inventory.cpus}/${s.inventory.gpuIds.length}/${s.inventory.ramMb ?? '-'}/${[...s.labels].sort().join(',')}`;
const ascending = (keys: Iterable<number>, min: number) => [...keys].filter((k) => k >= min).sort((a, b) => a - b);

/** Machines by name with their indexes. Call `update` around every change of a machine's books. */
export class MachineSet {
  readonly #byName = new Map<string, MachineEntry>();
  readonly #byFree = new Map<number, Map<number, Set<MachineEntry>>>();
  readonly #byLabel = new Map<string, Set<MachineEntry>>();
  readonly #shapes = new Map<string, Shape>();
  #engine?: MachineEntry;

  /** Adds `spec` (the engine when `spec.remote` is false). @throws Error if the name is taken. */
  add(spec: MachineSpec): MachineEntry {
    if (this.#byName.has(spec.name)) throw new Error(`machine ${spec.name} already attached`);
    const e: MachineEntry = { spec, books: new ResourceAccountant(spec.inventory), attachedAt: Date.now() };
    this.#byName.set(spec.name, e);
    if (!spec.remote) this.#engine ??= e;
    this.#index(e);
    for (const l of spec.labels) {
      let set = this.#byLabel.get(l);
      if (!set) this.#byLabel.set(l, (set = new Set()));
      set.add(e);
    }
    const k = shapeKey(spec);
    const shape = this.#shapes.get(k);
    if (shape) shape.count++;
    else this.#shapes.set(k, { cpus: spec.inventory.cpus, gpus: spec.inventory.gpuIds.length, ramMb: spec.inventory.ramMb, labels: [...spec.labels], count: 1 });
    return e;
  }

  /** Removes the machine named `name`; returns it, or undefined. */
  remove(name: string): MachineEntry | undefined {
    const e = this.#byName.get(name);
    if (!e) return undefined;
    this.#byName.delete(name);
    this.#unindex(e);
    for (const l of e.spec.labels) {
      const set = this.#byLabel.get(l);
      set?.delete(e);
      if (set?.size === 0) this.#byLabel.delete(l);
    }
    const k = shapeKey(e.spec);
    const shape = this.#shapes.get(k)!;
    if (--shape.count === 0) this.#shapes.delete(k);
    if (this.#engine === e) this.#engine = undefined;
    return e;
  }

  /** The machine named `name`. */
  get(name: string): MachineEntry | undefined {
    return this.#byName.get(name);
  }

  /** The engine host's entry. */
  get engine(): MachineEntry | undefined {
    return this.#engine;
  }

  /** Every machine, the engine first, then in attach order. */
  all(): MachineEntry[] {
    const rest = [...this.#byName.values()].filter((e) => e !== this.#engine);
    return this.#engine ? [this.#engine, ...rest] : rest;
  }

  /** Number of machines. */
  get size(): number {
    return this.#byName.size;
  }

  /** Machines carrying `label`. */
  withLabel(label: string): Iterable<MachineEntry> {
    return this.#byLabel.get(label) ?? [];
  }

  /** True when some machine carries `label`. */
  hasLabel(label: string): boolean {
    return this.#byLabel.has(label);
  }

  /**
   * Machines with at least `a.gpus` free devices and `a.cpus` free cores, in best-fit order:
   * fewest free GPUs first, then fewest free cores. Lazy: stop iterating at the first that fits.
   */
  *bestFit(a: Amount): Iterable<MachineEntry> {
    for (const g of ascending(this.#byFree.keys(), a.gpus)) {
      const byCpus = this.#byFree.get(g)!;
      for (const c of ascending(byCpus.keys(), a.cpus)) yield* byCpus.get(c)!;
    }
  }

  /**
   * True when some machine could ever hold `a` (by shape, not per machine); with `label`, only
   * machines carrying it count.
   */
  anyShapeHolds(a: Amount, label?: string): boolean {
    for (const s of this.#shapes.values()) {
      if (label && !s.labels.includes(label)) continue;
      if (a.cpus <= s.cpus && a.gpus <= s.gpus && (a.ramMb === undefined || s.ramMb === undefined || a.ramMb <= s.ramMb)) return true;
    }
    return false;
  }

  /** Runs `change` (which alters `e`'s books) and keeps the free-capacity index right. */
  update(e: MachineEntry, change: () => void): void {
    this.#unindex(e);
    try {
      change();
    } finally {
      if (this.#byName.get(e.spec.name) === e) this.#index(e);
    }
  }

  #index(e: MachineEntry): void {
    const { gpus, cpus } = e.books.free;
    let byCpus = this.#byFree.get(gpus);
    if (!byCpus) this.#byFree.set(gpus, (byCpus = new Map()));
    let set = byCpus.get(cpus);
    if (!set) byCpus.set(cpus, (set = new Set()));
    set.add(e);
  }

  #unindex(e: MachineEntry): void {
    const { gpus, cpus } = e.books.free;
    const byCpus = this.#byFree.get(gpus);
    const set = byCpus?.get(cpus);
    if (!set?.delete(e)) throw new Error(`index out of step for ${e.spec.name}`);
    if (set.size === 0) byCpus!.delete(cpus);
    if (byCpus!.size === 0) this.#byFree.delete(gpus);
  }
}
