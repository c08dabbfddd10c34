/**
 * Waiting claims (SPEC P6, P7, P12, Q1): queue order (priority, then arrival; order.ts), grouped by what they wait
 * for (a wait class: the same ask, label, policy and priority), and the per-machine reservations that keep a large
 * waiter from being overtaken forever. A class has one reservation target; every member holds back its amount
 * there. Only a class's oldest member (its head) can ever be granted before the rest: they ask the
 * same and the younger face more reservations. Costs are per class and per change, not waiters ×
 * machines.
 */
import type { Amount } from '../resources/books.js';
import type { Usage } from './quota.js';
import type { MachineEntry } from './machines.js';
import { ahead, type Place } from './order.js';
import { priorityOf } from './priority.js';
import { Reservations } from './reservations.js';
import type { Grant, NormalizedAsk, QueuedInfo } from './types.js';

/** A claim that fits some machine, or will, but not right now. */
export interface Waiter extends Place {
  claimId: string;
  ask: NormalizedAsk;
  /** Arrival order (larger = younger). */
  seq: number;
  /** Its priority (SPEC Q1): its class's, `ask.priority` or 0. */
  prio: number;
  since: number;
  cls: WaitClass;
  /** Younger / older member of the same class. */
  next?: Waiter;
  prev?: Waiter;
  resolve(g: Grant): void;
  reject(err: unknown): void;
  /** Removes the abort listener. */
  detach(): void;
  /**
   * Set once it told victims to give back what its cohort lent (SPEC Q3, reclaim.ts): what its tenant's quota holds
   * reserved for it until it leaves the queue. It is not looked at again.
   */
  reclaiming?: Usage;
  /** Hears a fresh Queued when why it waits changes (a provisioner's reason, SPEC V4). */
  notify?: (q: QueuedInfo) => void;
  /** Set for a preempted claim waiting again at its place (requeue.ts): why it was preempted. */
  requeued?: string;
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
  /** Set for a group member's reservation (groups.ts, rule G4): the group moves it, never the settle loop. */
  group?: string;
  /**
   * Set for a preemptor's own class (preempt.ts, SPEC Q2): its reservation stays on the machine its victims free
   * while they have their grace; the settle loop moves it only if that machine leaves.
   */
  pinned?: boolean;
  /**
   * Why its tenant's quota (SPEC Q3) holds it, or undefined: a held class reserves nothing (it has no target) and is
   * not granted; quota-gate.ts sets and clears it as its tenant's use changes.
   */
  quotaHeld?: string;
  /**
   * With fair sharing on (SPEC Q1): its head was last found unplaceable only because of what other waiters hold
   * back (machines or pools), so a fall of its tenant's share may let it through (settle.ts wakes it then).
   */
  heldBack?: boolean;
}

const namedKey = (r: Record<string, number> | undefined) =>
  r
    ? `/${Object.keys(r)
        .sort()
        .map((k) => `${k}=${r[k]}`)
        .join(',')}`
    : '';
// fail asks wait apart (issue 13); named resources and pools are part of what a class asks (issue 23)
const keyOf = (a: NormalizedAsk) =>
  `${a.cpus}/${a.gpus}/${a.ramMb ?? '-'}/${a.label ? `${a.policy}:${a.label}` : ''}` +
  `${a.onOversize === 'fail' ? '/fail' : ''}${namedKey(a.resources)}${a.pools ? `/pools${namedKey(a.pools)}` : ''}` +
  `${a.gpuShare ? `/share=${a.gpuShare}` : ''}${a.gpuType ? `/type=${a.gpuType}` : ''}` +
  `${a.priority ? `/prio=${a.priority}` : ''}${a.owner === undefined ? '' : `/owner=${a.owner}`}`;

/** True when `all` is in arrival order: filed in turn, no requeued claim among them (SPEC Q2). */
function arrivalOrdered(all: readonly Waiter[]): boolean {
  for (let i = 1; i < all.length; i++) if (all[i - 1].seq > all[i].seq) return false;
  return true;
}

/** The ask a pinned group reservation carries (its group's members are asked through the group). */
const PINNED_ASK: NormalizedAsk = { cpus: 0, gpus: 0, label: '', policy: 'prefer', node: '', runId: '', env: {} };

/** The waiting claims, their classes and the reservations they hold. */
export class WaitQueue {
  readonly #all = new Map<string, Waiter>();
  readonly #classes = new Map<string, WaitClass>();
  readonly #byRun = new Map<string, Set<Waiter>>();
  /** What the classes hold back, per machine (P7). */
  readonly reserved = new Reservations();
  /** Classes by the GPUs they want, each list sorted by the cores they want: who a machine's free room could serve. */
  readonly #byGpus = new Map<number, WaitClass[]>();
  #seq = 0;
  /** Reservations of waiting groups' members (rule G4): one-member classes outside the class index. */
  readonly #pinned = new Set<WaitClass>();
  /** Waiters (and pinned group reservations) per priority (SPEC Q1): positions, and who a new claim must leave. */
  readonly #byPrio = new Map<number, number>();
  /** The lowest priority in `#byPrio`; +Infinity when nothing waits. */
  #lowest = Number.POSITIVE_INFINITY;
  /** Classes by the owner of their asks (SPEC Q3): whose quota verdict changes with that tenant's use. */
  readonly #byOwner = new Map<string, Set<WaitClass>>();

  /** Number of waiters. */
  get size(): number {
    return this.#all.size;
  }

  /** True while `w` waits. */
  isWaiting(w: Waiter): boolean {
    return this.#all.get(w.claimId) === w;
  }

  /** Every waiter in arrival order. */
  waiters(): IterableIterator<Waiter> {
    return this.#all.values();
  }

  /** Every waiter in queue order (SPEC Q1): priority, then (`fair`: fair sharing is on) tenants' shares, arrival. */
  inOrder(fair = false): Waiter[] {
    const all = [...this.#all.values()];
    if (fair) return all.sort((x, y) => (ahead(x, y) ? -1 : ahead(y, x) ? 1 : 0));
    if (this.#byPrio.size > 1 || !arrivalOrdered(all)) all.sort((x, y) => y.prio - x.prio || x.seq - y.seq);
    return all;
  }

  /** The wait classes of `owner`'s asks (a tenant, SPEC Q1, Q3; '' for callers without an identity). */
  classesOf(owner: string): Iterable<WaitClass> {
    return this.#byOwner.get(owner) ?? [];
  }

  /** Every wait class. */
  classes(): IterableIterator<WaitClass> {
    return this.#classes.values();
  }

  /** The next arrival number: a group takes its turn among single claims by it (rule G4). */
  nextSeq(): number {
    return ++this.#seq;
  }

  /**
   * True when something waits at a priority below `prio`: then a new claim of `prio` is not held back by all that is
   * reserved, only by what waiters ahead of it reserve (SPEC Q1). False with a single priority: the fast path.
   */
  lowerWaits(prio: number): boolean {
    return this.#lowest < prio;
  }

  /** 1-based position of the youngest waiter of priority `prio`: every waiter of that priority or higher. */
  positionAt(prio: number): number {
    let n = 0;
    for (const [p, k] of this.#byPrio) if (p >= prio) n += k;
    return n;
  }

  /**
   * 1-based position of `w` itself: one more than the waiters ahead of it (SPEC Q1). For a claim waiting again at its
   * old place (requeue.ts), which `positionAt` would put last. Cost: every waiter.
   */
  positionOf(w: Waiter): number {
    let n = 1;
    for (const o of this.#all.values()) if (o !== w && ahead(o, w)) n++;
    return n;
  }

  #count(prio: number, by: number): void {
    const k = (this.#byPrio.get(prio) ?? 0) + by;
    if (k > 0) {
      this.#byPrio.set(prio, k);
      if (prio < this.#lowest) this.#lowest = prio;
      return;
    }
    this.#byPrio.delete(prio);
    if (prio !== this.#lowest) return;
    // a loop, not Math.min(...keys): any number of distinct priorities must not overflow the call stack
    let lowest = Number.POSITIVE_INFINITY;
    for (const p of this.#byPrio.keys()) if (p < lowest) lowest = p;
    this.#lowest = lowest;
  }

  /**
   * Holds back `amount` on `target` for member `member` of group `group`, which stands at `at` (rule G4, SPEC Q1):
   * waiters ahead of it are not held back by it, those behind and new claims are. Returns the reservation.
   */
  pin(group: string, member: number, at: Place, amount: Amount, target: MachineEntry): WaitClass {
    const cls: WaitClass = {
      key: `${group}#${member}`,
      ask: PINNED_ASK,
      amount,
      clamped: false,
      target,
      size: 0,
      group,
    };
    cls.head = cls.tail = { seq: at.seq, prio: at.prio, fair: at.fair } as Waiter;
    this.reserved.add(cls, 1);
    cls.size = 1;
    this.#pinned.add(cls);
    this.#count(at.prio, 1);
    return cls;
  }

  /** Takes back a reservation made by `pin`. */
  unpin(cls: WaitClass): void {
    if (!this.#pinned.delete(cls)) return;
    this.reserved.add(cls, -1);
    cls.size = 0;
    this.#count(cls.head!.prio, -1);
  }

  /** The waiters of run `runId`. */
  inRun(runId: string): Waiter[] {
    return [...(this.#byRun.get(runId) ?? [])];
  }

  /**
   * The classes whose amount fits `gpus` free devices and `cpus` free cores (memory and labels
   * are the caller's to check): the only ones a machine with that much free could serve. Walks
   * the distinct GPU counts asked, then only classes that fit.
   */
  *servable(gpus: number, cpus: number): IterableIterator<WaitClass> {
    for (const [g, list] of this.#byGpus) {
      if (g > gpus) continue;
      for (const cls of list) {
        if (cls.amount.cpus > cpus) break;
        yield cls;
      }
    }
  }

  /**
   * Files a waiter: the youngest, or at arrival number `seq` (a preempted claim waiting again at its place, SPEC Q2).
   * A new class starts with `amount`, `clamped` and `target`; an existing class keeps its own. Returns the waiter.
   */
  add(
    w: Omit<Waiter, 'seq' | 'cls'>,
    amount: Amount,
    clamped: boolean,
    target: () => MachineEntry | undefined,
    seq = ++this.#seq,
  ): Waiter {
    const key = keyOf(w.ask);
    let cls = this.#classes.get(key);
    if (!cls) {
      cls = { key, ask: w.ask, amount, clamped, size: 0, target: target() };
      this.#classes.set(key, cls);
      this.#file(cls);
      this.#own(cls, true);
    }
    return this.#enter({ ...w, seq, prio: priorityOf(w.ask) }, cls);
  }

  /** Links `w` into `cls` by arrival number (as the youngest, unless it is a requeued older one) and counts it. */
  #enter(w: Omit<Waiter, 'cls'>, cls: WaitClass): Waiter {
    let after = cls.tail;
    while (after && after.seq > w.seq) after = after.prev; // only a requeued claim walks (SPEC Q2)
    const before = after ? after.next : cls.head;
    const full: Waiter = Object.assign(w, { cls, prev: after, next: before }) as Waiter;
    this.#count(full.prio, 1);
    if (after) after.next = full;
    else cls.head = full;
    if (before) before.prev = full;
    else cls.tail = full;
    this.reserved.add(cls, 1);
    cls.size++;
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
    this.#count(w.prio, -1);
    const run = this.#byRun.get(w.ask.runId)!;
    run.delete(w);
    if (run.size === 0) this.#byRun.delete(w.ask.runId);
    const cls = w.cls;
    if (w.prev) w.prev.next = w.next;
    else cls.head = w.next;
    if (w.next) w.next.prev = w.prev;
    else cls.tail = w.prev;
    w.prev = w.next = undefined;
    this.reserved.add(cls, -1);
    cls.size--;
    if (cls.size === 0) {
      this.#unfile(cls);
      this.#classes.delete(cls.key);
      this.#own(cls, false);
    }
    return true;
  }

  /**
   * Moves waiter `w` (its class's youngest) into a class of its own whose reservation stays on `target` (a preemptor,
   * SPEC Q2): its amount is held back there, against anything behind it, until it is granted or leaves.
   */
  isolate(w: Waiter, target: MachineEntry): void {
    const { amount, clamped } = w.cls;
    this.remove(w);
    const cls: WaitClass = { key: `${w.cls.key}#preempt:${w.claimId}`, ask: w.ask, amount, clamped, size: 0, target };
    cls.pinned = true;
    this.#classes.set(cls.key, cls);
    this.#file(cls);
    this.#own(cls, true);
    this.#enter(w, cls); // the same waiter, with its arrival number: it keeps its place in the queue
  }

  /** Files or unfiles `cls` under its asks' owner ('' for callers without an identity). */
  #own(cls: WaitClass, on: boolean): void {
    const owner = cls.ask.owner ?? '';
    let set = this.#byOwner.get(owner);
    if (on) {
      if (!set) this.#byOwner.set(owner, (set = new Set()));
      set.add(cls);
    } else if (set?.delete(cls) && set.size === 0) this.#byOwner.delete(owner);
  }

  /** Points `cls` at `target`: every member's amount moves there. A class held by quota (SPEC Q3) reserves nowhere. */
  setTarget(cls: WaitClass, target: MachineEntry | undefined): void {
    if (cls.quotaHeld) target = undefined;
    if (cls.target === target) return;
    const n = cls.size;
    this.reserved.add(cls, -n);
    cls.target = target;
    this.reserved.add(cls, n);
  }

  /** Changes what `cls` waits for (re-fit, P11). */
  setAmount(cls: WaitClass, amount: Amount, clamped: boolean): void {
    const n = cls.size;
    this.reserved.add(cls, -n);
    this.#unfile(cls);
    cls.amount = amount;
    cls.clamped = clamped;
    this.#file(cls);
    this.reserved.add(cls, n);
  }

  /** Checks the classes, their lists and index, and the reservation ledger. @throws Error naming the mismatch. */
  check(attached: (m: MachineEntry) => boolean): void {
    let n = 0;
    for (const cls of this.#classes.values()) {
      n += cls.size;
      let count = 0;
      for (let w = cls.head; w; w = w.next) count++;
      if (count !== cls.size || cls.size === 0) {
        throw new Error(`wait class ${cls.key}: ${count} linked, size ${cls.size}`);
      }
      if (cls.target && !attached(cls.target))
        throw new Error(`wait class ${cls.key} reserves on ${cls.target.spec.name}, which left`);
    }
    if (n !== this.#all.size) throw new Error(`${this.#all.size} waiters, ${n} in classes`);
    let counted = 0;
    for (const k of this.#byPrio.values()) counted += k;
    if (counted !== n + this.#pinned.size) throw new Error(`${counted} waiters by priority, ${n} waiting`);
    for (const cls of this.#pinned)
      if (cls.target && !attached(cls.target)) throw new Error(`group reservation ${cls.key} on a machine that left`);
    let filed = 0;
    for (const [g, list] of this.#byGpus) {
      for (let i = 0; i < list.length; i++) {
        const sorted = i === 0 || list[i - 1].amount.cpus <= list[i].amount.cpus;
        if (list[i].amount.gpus !== g || !sorted) throw new Error(`wait class ${list[i].key} misfiled`);
      }
      filed += list.length;
    }
    if (filed !== this.#classes.size) throw new Error(`${filed} wait classes filed, ${this.#classes.size} exist`);
    this.reserved.check([...this.#classes.values(), ...this.#pinned]);
  }

  /** Files `cls` under the GPUs and cores it wants. */
  #file(cls: WaitClass): void {
    let list = this.#byGpus.get(cls.amount.gpus);
    if (!list) this.#byGpus.set(cls.amount.gpus, (list = []));
    let i = list.length;
    while (i > 0 && list[i - 1].amount.cpus > cls.amount.cpus) i--;
    list.splice(i, 0, cls);
  }

  #unfile(cls: WaitClass): void {
    const list = this.#byGpus.get(cls.amount.gpus)!;
    list.splice(list.indexOf(cls), 1);
    if (list.length === 0) this.#byGpus.delete(cls.amount.gpus);
  }
}
