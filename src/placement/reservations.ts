/**
 * What waiting claims hold back, per machine (SPEC P7): each wait class reserves its amount once
 * per member on its one target machine, only in the dimensions it asks. A new claim fits behind
 * all of it; a waiter fits behind only what waiters ahead of it hold back (older ones of its priority and any of a
 * higher one, SPEC Q1).
 */
import type { Amount } from '../resources/books.js';
import type { Named } from '../resources/quantity.js';
import type { MachineEntry } from './machines.js';
import { ahead, type Place } from './order.js';
import type { WaitClass, Waiter } from './waiting.js';

/** What is held back on one machine and by which classes. */
interface Held {
  cpus: number;
  gpus: number;
  ramMb: number;
  /** GPU shares held back, in units of 1e-4 (issue 23 item 3). */
  share: number;
  /** Named resources held back (units); absent until a class asking some reserves here. */
  res?: Named;
  classes: Set<WaitClass>;
}

const NONE: readonly WaitClass[] = [];
/** What a ledger check sums per machine. */
type Sum = Required<Omit<Amount, 'gpuType'>>;
const gpu = (a: Amount) => a.gpus > 0 || !!a.share;
const overlaps = (x: Amount, y: Amount) =>
  (x.cpus > 0 && y.cpus > 0) || (gpu(x) && gpu(y)) || (!!x.ramMb && !!y.ramMb) || sharesName(x.res, y.res);

function sharesName(x: Named | undefined, y: Named | undefined): boolean {
  if (!x || !y) return false;
  for (const k in x) if (y[k]) return true;
  return false;
}

/** `into` += `times` × `add`, per name (units). */
function addNamed(into: Named, add: Named, times: number): void {
  for (const k in add) into[k] = (into[k] ?? 0) + add[k] * times;
}

/** The per-machine reservation ledger, kept by WaitQueue as classes join, leave and move. */
export class Reservations {
  readonly #held = new Map<MachineEntry, Held>();

  /**
   * `times` × `cls.amount` more (or, negative, less) held back on `cls.target`; lists the class there while it holds.
   */
  add(cls: WaitClass, times: number): void {
    const m = cls.target;
    if (!m || times === 0) return;
    let h = this.#held.get(m);
    if (!h) this.#held.set(m, (h = { cpus: 0, gpus: 0, ramMb: 0, share: 0, classes: new Set() }));
    h.cpus += cls.amount.cpus * times;
    h.gpus += cls.amount.gpus * times;
    h.ramMb += (cls.amount.ramMb ?? 0) * times;
    h.share += (cls.amount.share ?? 0) * times;
    if (cls.amount.res) addNamed((h.res ??= {}), cls.amount.res, times);
    if (times > 0) h.classes.add(cls);
    else if (cls.size + times <= 0) {
      h.classes.delete(cls);
      if (h.classes.size === 0) this.#held.delete(m);
    }
  }

  /** Everything held back on `m` (what a new claim, younger than every waiter, must leave). */
  on(m: MachineEntry): Amount | undefined {
    return this.#held.get(m);
  }

  /** The classes reserving on `m` (a copy: callers may move them). */
  classesOn(m: MachineEntry): readonly WaitClass[] {
    const h = this.#held.get(m);
    return h ? [...h.classes] : NONE;
  }

  /** True when `w`'s class amount fits `m` now minus what waiters ahead of `w` hold back there. */
  fitsBehind(m: MachineEntry, w: Waiter): boolean {
    return this.fitsAhead(m, w.cls.amount, w);
  }

  /**
   * True when `a` fits `m` now minus what waiters ahead of place `at` hold back there (SPEC P7, Q1). Walks those
   * members only while they could still matter: each one takes at least one unit of something `a` needs, so the
   * walk is bounded by the machine's free capacity.
   */
  fitsAhead(m: MachineEntry, a: Amount, at: Place): boolean {
    if (!m.books.fitsNow(a)) return false;
    const h = this.#held.get(m);
    if (!h) return true;
    const r: Held = { cpus: 0, gpus: 0, ramMb: 0, share: 0, classes: h.classes };
    for (const cls of h.classes) {
      if (!overlaps(cls.amount, a)) continue;
      for (let o = cls.head; o && ahead(o, at); o = o.next) {
        r.cpus += cls.amount.cpus;
        r.gpus += cls.amount.gpus;
        r.ramMb += cls.amount.ramMb ?? 0;
        r.share += cls.amount.share ?? 0;
        if (cls.amount.res) addNamed((r.res ??= {}), cls.amount.res, 1);
        if (!m.books.fitsNow(a, r)) return false;
      }
    }
    return true;
  }

  /**
   * What waiters ahead of place `at` hold back on `m` (a group's view, rule G4, SPEC Q1): each class's amount once
   * per member ahead of it. Cost: those members of the classes reserving on `m`.
   */
  aheadOf(m: MachineEntry, at: Place): Amount | undefined {
    const h = this.#held.get(m);
    if (!h) return undefined;
    const r: Amount & { ramMb: number; res: Named } = { cpus: 0, gpus: 0, ramMb: 0, res: {} };
    for (const cls of h.classes) {
      for (let o = cls.head; o && ahead(o, at); o = o.next) {
        r.cpus += cls.amount.cpus;
        r.gpus += cls.amount.gpus;
        r.ramMb += cls.amount.ramMb ?? 0;
        if (cls.amount.res) addNamed(r.res, cls.amount.res, 1);
      }
    }
    return r;
  }

  /** Checks the ledger against `classes` (each with its size and target). @throws Error naming the machine. */
  check(classes: Iterable<WaitClass>): void {
    const want = new Map<MachineEntry, Sum>();
    const none = (): Sum => ({ cpus: 0, gpus: 0, ramMb: 0, share: 0, res: {} });
    for (const cls of classes) {
      if (!cls.target) continue;
      const cur = want.get(cls.target) ?? none();
      const k = cls.size;
      const a = cls.amount;
      if (a.res) addNamed(cur.res, a.res, k);
      want.set(cls.target, {
        cpus: cur.cpus + k * a.cpus,
        gpus: cur.gpus + k * a.gpus,
        ramMb: cur.ramMb + k * (a.ramMb ?? 0),
        share: cur.share + k * (a.share ?? 0),
        res: cur.res,
      });
    }
    for (const [m, h] of this.#held) {
      const w = want.get(m) ?? none();
      const named = new Set([...Object.keys(w.res), ...Object.keys(h.res ?? {})]);
      const resOff = [...named].some((k) => (w.res[k] ?? 0) !== (h.res?.[k] ?? 0));
      if (w.cpus !== h.cpus || w.gpus !== h.gpus || w.ramMb !== h.ramMb || w.share !== h.share || resOff)
        throw new Error(`reservations on ${m.spec.name} out of step`);
      want.delete(m);
    }
    if (want.size) throw new Error(`reservations missing on ${[...want.keys()].map((m) => m.spec.name).join(', ')}`);
  }
}
