/**
 * The machines whose books berth keeps (SPEC P1), the engine first, indexed by free GPU count so
 * a decision looks only at machines with enough free devices instead of scanning all of them.
 */
import { ResourceAccountant } from '../resources/books.js';
import type { MachineSpec } from './types.js';

/** One machine: its spec and its books. */
export interface MachineEntry {
  spec: MachineSpec;
  books: ResourceAccountant;
  attachedAt: number;
}

/** Machines by name, plus an index of free GPU count → machines. */
export class MachineSet {
  readonly #byName = new Map<string, MachineEntry>();
  readonly #byFreeGpus = new Map<number, Set<MachineEntry>>();
  #engine?: MachineEntry;

  /** Adds `spec` (the engine when `spec.remote` is false). @throws Error if the name is taken. */
  add(spec: MachineSpec): MachineEntry {
    if (this.#byName.has(spec.name)) throw new Error(`machine ${spec.name} already attached`);
    const e: MachineEntry = { spec, books: new ResourceAccountant(spec.inventory), attachedAt: Date.now() };
    this.#byName.set(spec.name, e);
    if (!spec.remote) this.#engine ??= e;
    this.#index(e);
    return e;
  }

  /** Removes the machine named `name`; returns it, or undefined. */
  remove(name: string): MachineEntry | undefined {
    const e = this.#byName.get(name);
    if (!e) return undefined;
    this.#byName.delete(name);
    this.#unindex(e);
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

  /** Machines with at least `gpus` free devices (from the index). */
  *withFreeGpus(gpus: number): Iterable<MachineEntry> {
    for (const [free, set] of this.#byFreeGpus) if (free >= gpus) yield* set;
  }

  /** True when some machine carries `label`. */
  hasLabel(label: string): boolean {
    for (const e of this.#byName.values()) if (e.spec.labels.includes(label)) return true;
    return false;
  }

  /** Call around every change of `e`'s books to keep the index right. */
  update(e: MachineEntry, change: () => void): void {
    this.#unindex(e);
    try {
      change();
    } finally {
      if (this.#byName.get(e.spec.name) === e) this.#index(e);
    }
  }

  #index(e: MachineEntry): void {
    const k = e.books.free.gpus;
    let set = this.#byFreeGpus.get(k);
    if (!set) this.#byFreeGpus.set(k, (set = new Set()));
    set.add(e);
  }

  #unindex(e: MachineEntry): void {
    for (const [k, set] of this.#byFreeGpus) {
      if (set.delete(e)) {
        if (set.size === 0) this.#byFreeGpus.delete(k);
        return;
      }
    }
  }
}
