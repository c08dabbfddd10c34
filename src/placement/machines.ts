/**
 * The machines whose books berth keeps (SPEC P1), the engine first. Grouped into classes of one
 * shape (total cores, GPUs, labels, named resources), each indexed by free capacity (capacity.ts), and classes
 * indexed by label, so a decision walks classes and buckets, never every machine (SPEC P12).
 */
import { ResourceAccountant, type Amount, type Holding } from '../resources/books.js';
import { type Named, UNIT } from '../resources/quantity.js';
import { MachineClass } from './capacity.js';
import type { MachineSpec } from './types.js';

/** One machine: its spec, its books and where the indexes file it. */
export interface MachineEntry {
  spec: MachineSpec;
  books: ResourceAccountant;
  attachedAt: number;
  /** Its class (same cores, GPUs, labels). */
  cls: MachineClass;
  /** Its free-capacity bucket inside the class and its slot there (kept by MachineClass). */
  bucket: number;
  slot: number;
  /** The free memory it is filed under inside its bucket (0 when not limited), and the GPU share levels. */
  ramFiled: number;
  sharesFiled: number[] | undefined;
  /** The free units of each named resource of its class it is filed under (capacity.ts). */
  resFiled?: number[];
  /** Set while its worker is disconnected and held (SPEC S2, S6): never chosen for a new grant. */
  hold: MachineHold | undefined;
}

/** A disconnected machine's hold (holds.ts): until when (ms since the epoch), why, since when. */
export interface MachineHold {
  untilMs: number;
  why: string;
  since: number;
  timer?: ReturnType<typeof setTimeout>;
}

const namedKey = (r: Record<string, number> | undefined) =>
  r
    ? Object.keys(r)
        .sort()
        .map((k) => `${k}=${r[k]}`)
        .join(',')
    : '';
const classKey = (s: MachineSpec) =>
  `${s.inventory.cpus}/${s.inventory.gpuIds.length}/${[...s.labels].sort().join(',')}` +
  `/${namedKey(s.inventory.resources)}/${s.inventory.gpuType ?? ''}`;

/** Machines by name with their indexes. Change a machine's books only through `take` and `give`. */
export class MachineSet {
  readonly #byName = new Map<string, MachineEntry>();
  readonly #classes = new Map<string, MachineClass>();
  readonly #byLabel = new Map<string, Set<MachineClass>>();
  /** Named resource → how many machines have some of it (issue 23 item 5: an unknown name fails at once). */
  readonly #named = new Map<string, number>();
  /** GPU type → how many machines have GPUs of it (issue 23 item 4: an unknown type fails at once). */
  readonly #types = new Map<string, number>();
  #engine?: MachineEntry;
  /** What the machines in the books have in all, in units (cpus, gpus, ram_mb, named), for fair sharing. */
  readonly #totals: Named = {};
  /** Bumped whenever `totals` changes. */
  #totalsVersion = 0;

  /** Adds `spec` (the engine when `spec.remote` is false). @throws Error if the name is taken. */
  add(spec: MachineSpec): MachineEntry {
    if (this.#byName.has(spec.name)) throw new Error(`machine ${spec.name} already attached`);
    const cls = this.#classFor(spec);
    const books = new ResourceAccountant(spec.inventory);
    const e: MachineEntry = {
      spec,
      books,
      attachedAt: Date.now(),
      cls,
      bucket: -1,
      slot: -1,
      ramFiled: 0,
      sharesFiled: undefined,
      hold: undefined,
    };
    this.#byName.set(spec.name, e);
    if (!spec.remote) this.#engine ??= e;
    cls.add(e);
    this.#count(spec, 1);
    return e;
  }

  #count(spec: MachineSpec, by: number): void {
    const inv = spec.inventory;
    this.#sum('cpus', inv.cpus * UNIT * by);
    this.#sum('gpus', new Set(inv.gpuIds).size * UNIT * by);
    if (inv.ramMb !== undefined) this.#sum('ram_mb', inv.ramMb * UNIT * by);
    for (const k in inv.resources ?? {}) this.#sum(k, inv.resources![k] * by);
    this.#totalsVersion++;
    const t = spec.inventory.gpuType;
    if (t) {
      const n = (this.#types.get(t) ?? 0) + by;
      if (n > 0) this.#types.set(t, n);
      else this.#types.delete(t);
    }
    for (const k in spec.inventory.resources ?? {}) {
      const n = (this.#named.get(k) ?? 0) + by;
      if (n > 0) this.#named.set(k, n);
      else this.#named.delete(k);
    }
  }

  #sum(k: string, by: number): void {
    if (by === 0) return;
    const v = (this.#totals[k] ?? 0) + by;
    if (v > 0) this.#totals[k] = v;
    else delete this.#totals[k];
  }

  /** What the machines in the books have in all, per resource, in units (fair sharing's denominators). */
  get totals(): Readonly<Named> {
    return this.#totals;
  }

  /** Changes whenever `totals` does. */
  get totalsVersion(): number {
    return this.#totalsVersion;
  }

  /** The GPU types some machine in the books has, sorted. */
  gpuTypes(): string[] {
    return [...this.#types.keys()].sort();
  }

  /** True when some machine in the books has GPUs of type `t`. */
  hasGpuType(t: string): boolean {
    return this.#types.has(t);
  }

  /** True when some machine in the books has named resource `name`. */
  hasResource(name: string): boolean {
    return this.#named.has(name);
  }

  /**
   * Gives attached `e` a new spec with the same inventory (a reconnected worker, SPEC S2): its books stay, it is
   * filed under the class of its new labels.
   */
  respec(e: MachineEntry, spec: MachineSpec): void {
    if (classKey(spec) === classKey(e.spec)) {
      e.spec = spec;
      return;
    }
    this.remove(e.spec.name);
    e.spec = spec;
    e.cls = this.#classFor(spec);
    this.#byName.set(spec.name, e);
    this.#count(spec, 1);
    e.cls.add(e);
  }

  #classFor(spec: MachineSpec): MachineClass {
    const k = classKey(spec);
    let cls = this.#classes.get(k);
    if (!cls) {
      cls = new MachineClass(
        spec.inventory.cpus,
        new Set(spec.inventory.gpuIds).size,
        [...new Set(spec.labels)],
        spec.inventory.resources,
        spec.inventory.gpuType,
      );
      this.#classes.set(k, cls);
      for (const l of cls.labels) {
        let set = this.#byLabel.get(l);
        if (!set) this.#byLabel.set(l, (set = new Set()));
        set.add(cls);
      }
    }
    return cls;
  }

  /** Removes the machine named `name`; returns it, or undefined. */
  remove(name: string): MachineEntry | undefined {
    const e = this.#byName.get(name);
    if (!e) return undefined;
    this.#byName.delete(name);
    this.#count(e.spec, -1);
    e.cls.remove(e);
    if (e.cls.size === 0) {
      this.#classes.delete(classKey(e.spec));
      for (const l of e.cls.labels) {
        const set = this.#byLabel.get(l)!;
        set.delete(e.cls);
        if (set.size === 0) this.#byLabel.delete(l);
      }
    }
    if (this.#engine === e) this.#engine = undefined;
    return e;
  }

  /** The machine named `name`. */
  get(name: string): MachineEntry | undefined {
    return this.#byName.get(name);
  }

  /** True when `e` is attached now (not a machine that left). */
  has(e: MachineEntry): boolean {
    return this.#byName.get(e.spec.name) === e;
  }

  /** The engine host's entry. */
  get engine(): MachineEntry | undefined {
    return this.#engine;
  }

  /** Every machine, the engine first, then in attach order. Iterates the set itself: no copy. */
  *all(): IterableIterator<MachineEntry> {
    if (this.#engine) yield this.#engine;
    for (const e of this.#byName.values()) if (e !== this.#engine) yield e;
  }

  /** Number of machines. */
  get size(): number {
    return this.#byName.size;
  }

  /** The machine classes; with `label`, only those carrying it. */
  classes(label?: string): Iterable<MachineClass> {
    if (label === undefined) return this.#classes.values();
    return this.#byLabel.get(label) ?? [];
  }

  /** True when some machine carries `label`. */
  hasLabel(label: string): boolean {
    return this.#byLabel.has(label);
  }

  /**
   * Takes `a` for `claimId` on `e`'s books, keeping the free-capacity index right.
   * @throws BooksError when it does not fit.
   */
  take(e: MachineEntry, claimId: string, a: Amount): Holding {
    e.cls.unindex(e);
    try {
      return e.books.take(claimId, a);
    } finally {
      e.cls.index(e);
    }
  }

  /** As `take`, with exactly the holding `h` (a restored claim). @throws BooksError when it is not free. */
  takeExact(e: MachineEntry, claimId: string, h: Holding): Holding {
    e.cls.unindex(e);
    try {
      return e.books.takeExact(claimId, h);
    } finally {
      e.cls.index(e);
    }
  }

  /** Gives back what `claimId` holds on `e` (idempotent), keeping the index right while `e` is attached. */
  give(e: MachineEntry, claimId: string): boolean {
    if (!this.has(e)) return e.books.give(claimId);
    e.cls.unindex(e);
    const given = e.books.give(claimId);
    e.cls.index(e);
    return given;
  }
}
