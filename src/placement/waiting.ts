/**
 * Waiting claims (SPEC P6, P7, P12): arrival order, grouped by what they wait for (a wait class:
 * the same ask, label and policy), and the per-machine reservations that keep a large waiter from
 * being overtaken forever. A class has one reservation target; every member holds back its amount
 * there. Only a class's oldest member (its head) can ever be granted before the rest: they ask the
 * same and the younger face more reservations. Costs are per class and per change, not waiters ×
 * machines.
 */
import type { Amount } from '../resources/books.js';
import type { MachineEntry } from './machines.js';
import type { Grant, NormalizedAsk } from './types.js';

/** A claim that fits some machine, or will, but not right now. */
export interface Waiter {
  claimId: string;
  ask: NormalizedAsk;
  /** Arrival order (larger = younger). */
  seq: number;
  since: number;
  cls: WaitClass;
  /** Younger / older member of the same class. */
  next?: Waiter;
  prev?: Waiter;
  resolve(g: Grant): void;
  reject(err: unknown): void;
  /** Removes the abort listener. */
  detach(): void;
}

/** Waiters asking the same thing; `amount` is the ask, or the ask clamped to the best machine (P5, P11). */
export interface WaitClass {
  readonly key: string;
  readonly ask: NormalizedAsk;
  amount: Amount;
  clamped: boolean;
  /** Where its members hold back `amount` each (P7); undefined when no attached machine could hold it. */
  target?: MachineEntry;
  head?: Waiter;
  tail?: Waiter;
  size: number;
}

/** What is held back on one machine and by which classes. */
interface Held extends Amount {
  ramMb: number;
  classes: Set<WaitClass>;
}

const keyOf = (a: NormalizedAsk) => `${a.cpus}/${a.gpus}/${a.ramMb ?? '-'}/${a.label ? `${a.policy}:${a.label}` : ''}`;
const overlaps = (x: Amount, y: Amount) => (x.cpus > 0 && y.cpus > 0) || (x.gpus > 0 && y.gpus > 0) || (!!x.ramMb && !!y.ramMb);

/** The waiting claims, their classes and the reservations they hold. */
export class WaitQueue {
  readonly #all = new Map<string, Waiter>();
  readonly #classes = new Map<string, WaitClass>();
  readonly #byRun = new Map<string, Set<Waiter>>();
  readonly #held = new Map<MachineEntry, Held>();
  #seq = 0;

  /** Number of waiters. */
  get size(): number {
    return this.#all.size;
  }

  /** Every waiter in arrival order. */
  waiters(): IterableIterator<Waiter> {
    return this.#all.values();
  }

  /** Every wait class. */
  classes(): IterableIterator<WaitClass> {
    return this.#classes.values();
  }

  /** The waiters of run `runId`. */
  inRun(runId: string): Waiter[] {
    return [...(this.#byRun.get(runId) ?? [])];
  }

  /** The class an ask would join, if it has members. */
  classOf(ask: NormalizedAsk): WaitClass | undefined {
    return this.#classes.get(keyOf(ask));
  }

  /**
   * Appends a waiter. A new class starts with `amount`, `clamped` and `target`; an existing class
   * keeps its own. Returns the waiter.
   */
  add(w: Omit<Waiter, 'seq' | 'cls'>, amount: Amount, clamped: boolean, target: () => MachineEntry | undefined): Waiter {
    const key = keyOf(w.ask);
    let cls = this.#classes.get(key);
    if (!cls) {
      cls = { key, ask: w.ask, amount, clamped, size: 0, target: target() };
      this.#classes.set(key, cls);
      this.#link(cls);
    }
    const full: Waiter = { ...w, seq: ++this.#seq, cls, prev: cls.tail };
    if (cls.tail) cls.tail.next = full;
    else cls.head = full;
    cls.tail = full;
    cls.size++;
    this.#hold(cls.target, cls.amount, 1);
    this.#all.set(full.claimId, full);
    let run = this.#byRun.get(w.ask.runId);
    if (!run) this.#byRun.set(w.ask.runId, (run = new Set()));
    run.add(full);
    return full;
  }

  /** Takes `w` out; returns false when it was not waiting. Its class's target is held back less. */
  remove(w: Waiter): boolean {
    if (this.#all.get(w.claimId) !== w) return false;
    this.#all.delete(w.claimId);
    const run = this.#byRun.get(w.ask.runId)!;
    run.delete(w);
    if (run.size === 0) this.#byRun.delete(w.ask.runId);
    const cls = w.cls;
    if (w.prev) w.prev.next = w.next;
    else cls.head = w.next;
    if (w.next) w.next.prev = w.prev;
    else cls.tail = w.prev;
    w.prev = w.next = undefined;
    cls.size--;
    this.#hold(cls.target, cls.amount, -1);
    if (cls.size === 0) {
      this.#unlink(cls);
      this.#classes.delete(cls.key);
    }
    return true;
  }

  /** Points `cls` at `target`: every member's amount moves there. */
  setTarget(cls: WaitClass, target: MachineEntry | undefined): void {
    if (cls.target === target) return;
    this.#hold(cls.target, cls.amount, -cls.size);
    this.#unlink(cls);
    cls.target = target;
    this.#link(cls);
    this.#hold(target, cls.amount, cls.size);
  }

  /** Changes what `cls` waits for (re-fit, P11). */
  setAmount(cls: WaitClass, amount: Amount, clamped: boolean): void {
    this.#hold(cls.target, cls.amount, -cls.size);
    cls.amount = amount;
    cls.clamped = clamped;
    this.#hold(cls.target, cls.amount, cls.size);
  }

  /** The classes reserving on `m`. */
  targeting(m: MachineEntry): WaitClass[] {
    const h = this.#held.get(m);
    return h ? [...h.classes] : [];
  }

  /** Everything held back on `m` (for a new claim, younger than every waiter). */
  reservedOn(m: MachineEntry): Amount | undefined {
    return this.#held.get(m);
  }

  /**
   * True when `w`'s class amount fits `m` now minus what waiters older than `w` hold back there
   * (P7). Walks older members only while they could still matter: each one held back takes at
   * least one unit of something `w` needs, so the walk is bounded by the machine's free capacity.
   */
  fitsBehind(m: MachineEntry, w: Waiter): boolean {
    const a = w.cls.amount;
    if (!m.books.fitsNow(a)) return false;
    const h = this.#held.get(m);
    if (!h) return true;
    const r = { cpus: 0, gpus: 0, ramMb: 0 };
    for (const cls of h.classes) {
      if (!overlaps(cls.amount, a)) continue;
      for (let o = cls.head; o && o.seq < w.seq; o = o.next) {
        r.cpus += cls.amount.cpus;
        r.gpus += cls.amount.gpus;
        r.ramMb += cls.amount.ramMb ?? 0;
        if (!m.books.fitsNow(a, r)) return false;
      }
    }
    return true;
  }

  /** Checks the reservation ledger against the classes. @throws Error naming the mismatch. */
  check(attached: (m: MachineEntry) => boolean): void {
    const want = new Map<MachineEntry, Amount>();
    let n = 0;
    for (const cls of this.#classes.values()) {
      n += cls.size;
      let count = 0;
      for (let w = cls.head; w; w = w.next) count++;
      if (count !== cls.size || cls.size === 0) throw new Error(`wait class ${cls.key}: ${count} linked, size ${cls.size}`);
      if (!cls.target) continue;
      if (!attached(cls.target)) throw new Error(`wait class ${cls.key} reserves on ${cls.target.spec.name}, which left`);
      const cur = want.get(cls.target) ?? { cpus: 0, gpus: 0, ramMb: 0 };
      want.set(cls.target, { cpus: cur.cpus + cls.size * cls.amount.cpus, gpus: cur.gpus + cls.size * cls.amount.gpus, ramMb: (cur.ramMb ?? 0) + cls.size * (cls.amount.ramMb ?? 0) });
    }
    if (n !== this.#all.size) throw new Error(`${this.#all.size} waiters, ${n} in classes`);
    for (const [m, h] of this.#held) {
      const w = want.get(m) ?? { cpus: 0, gpus: 0, ramMb: 0 };
      if (w.cpus !== h.cpus || w.gpus !== h.gpus || w.ramMb !== h.ramMb) throw new Error(`reservations on ${m.spec.name} out of step`);
      want.delete(m);
    }
    if (want.size) throw new Error(`reservations missing on ${[...want.keys()].map((m) => m.spec.name).join(', ')}`);
  }

  /** Lists `cls` among the classes reserving on its target. */
  #link(cls: WaitClass): void {
    if (!cls.target) return;
    let h = this.#held.get(cls.target);
    if (!h) this.#held.set(cls.target, (h = { cpus: 0, gpus: 0, ramMb: 0, classes: new Set() }));
    h.classes.add(cls);
  }

  #unlink(cls: WaitClass): void {
    const h = cls.target && this.#held.get(cls.target);
    if (!h) return;
    h.classes.delete(cls);
    if (h.classes.size === 0) this.#held.delete(cls.target!);
  }

  /** Adds `times` × `a` to what is held back on `m` (negative to give back). */
  #hold(m: MachineEntry | undefined, a: Amount, times: number): void {
    const h = m && this.#held.get(m);
    if (!h || times === 0) return;
    h.cpus += a.cpus * times;
    h.gpus += a.gpus * times;
    h.ramMb += (a.ramMb ?? 0) * times;
  }
}
