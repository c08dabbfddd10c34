/**
 * The placer: claims as leases across every machine (SPEC P1–P12). Decisions run on the event
 * loop without locks. A change of books marks the machines it touched; `#settle` then wakes only
 * the wait classes a touched machine could serve, oldest head first, and moves the reservations
 * of classes whose target machine changed (P7, P12). Release is idempotent (P8).
 */
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, anyCanEverHold, chooseNow, clampTarget, eligible, requires, reservationTarget } from './choose.js';
import { allocationEnv } from './env.js';
import { Lease } from './lease.js';
import { MachineSet, type MachineEntry } from './machines.js';
import type { Provisioner } from './provisioner.js';
import { queuedInfo } from './queued.js';
import { placerSnapshot, type PlacerSnapshot } from './snapshot.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from './types.js';
import { WaitQueue, type WaitClass, type Waiter } from './waiting.js';

/** Placer construction options. `reconnectGraceMs`: how long a detached label still counts (default 30 000). */
export interface PlacerOptions {
  engine: MachineSpec;
  events: EventBus;
  reconnectGraceMs?: number;
  provisioners?: Provisioner[];
}

interface Held {
  grant: Lease;
  entry: MachineEntry;
  since: number;
}

const same = (x: Amount, y: Amount) => x.cpus === y.cpus && x.gpus === y.gpus && x.ramMb === y.ramMb;

/** Keeps the books of every machine and grants claims. */
export class Placer {
  readonly machines = new MachineSet();
  readonly #events: EventBus;
  readonly #graceMs: number;
  readonly provisioners: Provisioner[];
  readonly #queue = new WaitQueue();
  readonly #held = new Map<string, Held>();
  readonly #detachedLabels = new Map<string, number>();
  /** Machines whose free capacity changed or that left: classes reserving there re-choose. */
  readonly #changed = new Set<MachineEntry>();
  /** Machines with more room than before (release, attach, a reservation gone): may serve a waiter. */
  readonly #touched = new Set<MachineEntry>();
  /** Classes whose head may be grantable now. */
  readonly #woken = new Set<WaitClass>();
  #settling = false;
  #ids = 0;

  constructor(opts: PlacerOptions) {
    this.#events = opts.events;
    this.#graceMs = opts.reconnectGraceMs ?? 30_000;
    this.provisioners = opts.provisioners ?? [];
    this.machines.add({ ...opts.engine, remote: false });
  }

  /**
   * A worker's books join (SPEC P1); the same name replaces the old machine (W1). Waiters are
   * re-fitted (P11) and those it could serve woken (P7).
   */
  attach(m: MachineSpec): void {
    if (this.machines.get(m.name)) this.detach(m.name, `worker ${m.name} was replaced by a new stream`);
    const e = this.machines.add({ ...m, remote: true });
    this.#events.emit({ kind: 'worker_attached', machine: m.name, detail: `${m.name}: ${m.inventory.cpus} cpu(s), ${m.inventory.gpuIds.length} gpu(s)${m.labels.length ? `, labels ${m.labels.join(',')}` : ''}` });
    this.#touched.add(e);
    this.#refit();
    this.#settle();
  }

  /**
   * A machine leaves with its books (SPEC W3): each claim on it loses its lease (`lost` aborts
   * with UNAVAILABLE "worker <name> went away"); waiters are re-fitted (P11) and woken. No-op for
   * unknown names.
   */
  detach(name: string, reason = `worker ${name} went away`): void {
    const entry = this.machines.get(name);
    if (!entry || !entry.spec.remote) return;
    this.machines.remove(name);
    for (const cls of this.#queue.reserved.classesOn(entry)) {
      this.#queue.setTarget(cls, reservationTarget(this.machines, cls.ask, cls.amount));
    }
    for (const label of entry.spec.labels) this.#detachedLabels.set(label, Date.now());
    const lost = [...this.#held.values()].filter((h) => h.entry === entry);
    for (const h of lost) this.#held.delete(h.grant.claimId);
    for (const { grant: g } of lost) {
      g.lose(new BerthError('unavailable', `${reason}: claim ${g.claimId} on ${name} lost`));
      this.#events.emit({ kind: 'claim_lost', claimId: g.claimId, machine: name, node: g.ask.node, runId: g.ask.runId, detail: reason });
    }
    this.#events.emit({ kind: 'worker_detached', machine: name, detail: reason });
    if (entry.spec.labels.length) setTimeout(() => this.#expireLabels(), this.#graceMs + 1).unref();
    this.#refit();
    this.#settle();
  }

  /**
   * Claims resources for `ask`: resolves with the Grant now, or after waiting (calling
   * `onQueued` once with why). Rejects with BerthError: FAILED_PRECONDITION for a required
   * label no machine carries (P3); the signal's reason when it aborts while waiting.
   */
  claim(ask: NormalizedAsk, opts: { signal: AbortSignal; onQueued?: (q: QueuedInfo) => void }): Promise<Grant> {
    if (opts.signal.aborted) return Promise.reject(opts.signal.reason);
    try {
      this.#checkLabel(ask);
    } catch (err) {
      return Promise.reject(err);
    }
    const claimId = `c${++this.#ids}`;
    const { amount, clamped } = this.#fit(ask, true);
    const now = chooseNow(this.machines, ask, amount, (m) => m.books.fitsNow(amount, this.#queue.reserved.on(m)));
    if (now) {
      const g = this.#grant(claimId, ask, amount, clamped, now.machine, now.fellBack);
      this.#settle();
      return Promise.resolve(g);
    }
    return new Promise<Grant>((resolve, reject) => {
      const { signal } = opts;
      const onAbort = () => this.#abandon(w, signal.reason);
      const w = this.#queue.add(
        { claimId, ask, since: Date.now(), resolve, reject, detach: () => signal.removeEventListener('abort', onAbort) },
        amount,
        clamped,
        () => reservationTarget(this.machines, ask, amount),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      const info = queuedInfo(this.machines, claimId, ask, w.cls.amount, this.#queue.size);
      this.#events.emit({ kind: 'node_queued', claimId, node: ask.node, runId: ask.runId, machine: info.bestMachine, detail: info.detail });
      opts.onQueued?.(info);
    });
  }

  /** Gives a claim back (SPEC P8). Idempotent: false when the id holds nothing. Wakes waiters it could serve. */
  release(claimId: string, why = 'released'): boolean {
    const h = this.#held.get(claimId);
    if (!h) return false;
    this.#held.delete(claimId);
    this.machines.give(h.entry, claimId);
    this.#changed.add(h.entry);
    this.#touched.add(h.entry);
    this.#events.emit({ kind: 'claim_released', claimId, machine: h.grant.machine, node: h.grant.ask.node, runId: h.grant.ask.runId, detail: why });
    this.#settle();
    return true;
  }

  /** The held claim `claimId`, if any. */
  get(claimId: string): Grant | undefined {
    return this.#held.get(claimId)?.grant;
  }

  /** Abandons the waiting claims of `runId` (Cancel); returns how many. */
  cancelRun(runId: string): number {
    const mine = this.#queue.inRun(runId);
    for (const w of mine) this.#abandon(w, new BerthError('cancelled', `run ${runId} cancelled`));
    return mine.length;
  }

  /**
   * What `ask` would wait for: '' when it can run now or after clamping; the amount (e.g.
   * "1 gpu(s) and 1 cpu(s)") when only a provisioner can start a machine for it (P10).
   * @throws BerthError FAILED_PRECONDITION for a required label no machine carries.
   */
  satisfiable(ask: NormalizedAsk): string {
    this.#checkLabel(ask);
    const amount = amountOf(ask);
    if (anyCanEverHold(this.machines, ask, amount)) return '';
    return this.provisioners.some((p) => p.covers(ask)) ? describeAmount(amount) : '';
  }

  /** The books, waiting claims (with where each holds back resources) and held claims. */
  snapshot(): PlacerSnapshot {
    return placerSnapshot(this.machines, [...this.#queue.waiters()], [...this.#held.values()], this.provisioners);
  }

  /**
   * Checks every machine's books, that held claims match them, and the waiting classes and their
   * reservations (P8). @throws BooksError or Error naming what broke.
   */
  checkInvariants(): void {
    let claims = 0;
    for (const m of this.machines.all()) {
      m.books.check(m.spec.name);
      claims += m.books.claims;
    }
    if (claims !== this.#held.size) throw new Error(`books hold ${claims} claims, placer ${this.#held.size}`);
    for (const w of this.#queue.waiters()) if (this.#held.has(w.claimId)) throw new Error(`claim ${w.claimId} both waiting and held`);
    this.#queue.check((m) => this.machines.has(m));
  }

  #checkLabel(ask: NormalizedAsk): void {
    if (ask.policy !== 'require' || ask.label === '' || this.machines.hasLabel(ask.label)) return;
    if (this.provisioners.some((p) => p.covers(ask))) return;
    const gone = this.#detachedLabels.get(ask.label);
    if (gone !== undefined && Date.now() - gone <= this.#graceMs) return;
    throw new BerthError('failed_precondition', `no machine carries label '${ask.label}' and no provisioner can start one`);
  }

  /**
   * The amount to wait for: the ask when some machine could ever hold it, or when a provisioner
   * covers it (P10; `provision` starts one); else clamped to the best real machine (P5).
   */
  #fit(ask: NormalizedAsk, provision: boolean): { amount: Amount; clamped: boolean; best?: MachineEntry } {
    const amount = amountOf(ask);
    if (anyCanEverHold(this.machines, ask, amount)) return { amount, clamped: false };
    const p = this.provisioners.find((x) => x.covers(ask));
    if (p) {
      if (provision) void p.provision(ask).catch(() => {});
      return { amount, clamped: false };
    }
    const t = clampTarget(this.machines, ask);
    if (!t) return { amount, clamped: false };
    if (provision) this.#clampedEvent(ask, t.amount, t.machine);
    return { amount: t.amount, clamped: true, best: t.machine };
  }

  #clampedEvent(ask: NormalizedAsk, to: Amount, m: MachineEntry): void {
    this.#events.emit({ kind: 'node_clamped', node: ask.node, runId: ask.runId, machine: m.spec.name, detail: `${describeAmount(amountOf(ask))} → ${describeAmount(to)} (best machine: ${m.spec.name})` });
  }

  /**
   * The set of machines changed: every class's verdict is fitted again, both ways (P11) — a
   * clamped class gets its whole ask once a machine could hold it, and one whose only fitting
   * machine left is clamped again. A class whose amount changed, or that had no target, re-chooses
   * its target and wakes. Cost: per wait class, per machine class.
   */
  #refit(): void {
    for (const cls of this.#queue.classes()) {
      const f = this.#fit(cls.ask, false);
      if (cls.target && same(f.amount, cls.amount)) continue;
      if (!same(f.amount, cls.amount)) {
        this.#queue.setAmount(cls, f.amount, f.clamped);
        if (f.best) for (let w = cls.head; w; w = w.next) this.#clampedEvent(w.ask, f.amount, f.best);
      }
      this.#retarget(cls);
      this.#woken.add(cls);
    }
  }

  /** Points `cls` at the machine it is closest to fitting, keeping its target when that is as close. */
  #retarget(cls: WaitClass): void {
    const old = cls.target;
    const t = reservationTarget(this.machines, cls.ask, cls.amount, old);
    if (t === old) return;
    this.#queue.setTarget(cls, t);
    if (old) this.#touched.add(old);
  }

  #grant(claimId: string, ask: NormalizedAsk, amount: Amount, clamped: boolean, entry: MachineEntry, fellBack: boolean): Grant {
    const holding = this.machines.take(entry, claimId, amount);
    this.#changed.add(entry);
    const env = allocationEnv(holding.cpus, holding.gpuIds, ask.env);
    const allocation = { cpus: holding.cpus, gpuIds: holding.gpuIds, ramMb: holding.ramMb, env };
    const grant = new Lease(claimId, entry.spec.name, entry.spec.remote, allocation, clamped, fellBack, ask);
    this.#held.set(claimId, { grant, entry, since: Date.now() });
    this.#events.emit({ kind: 'node_placed', claimId, node: ask.node, runId: ask.runId, machine: entry.spec.name, detail: `${describeAmount(amount)} on ${entry.spec.name}${holding.gpuIds.length ? ` (gpu ${holding.gpuIds.join(',')})` : ''}${fellBack ? ', fell back' : ''}${clamped ? ', clamped' : ''}` });
    return grant;
  }

  /** Takes `w` out of the queue; what its class held back on its target becomes room. */
  #unwait(w: Waiter): boolean {
    const target = w.cls.target;
    if (!this.#queue.remove(w)) return false;
    w.detach();
    if (target) this.#touched.add(target);
    return true;
  }

  #abandon(w: Waiter, reason: unknown): void {
    if (!this.#unwait(w)) return;
    this.#events.emit({ kind: 'node_abandoned', claimId: w.claimId, node: w.ask.node, runId: w.ask.runId, detail: reason instanceof Error ? reason.message : 'abandoned' });
    w.reject(reason);
    this.#settle();
  }

  /**
   * Brings the queue to rest after a change (P7, P12): classes reserving on a changed machine
   * re-choose their target; classes a touched machine's free room could serve wake (looked up by
   * amount, not by walking the queue); the oldest woken head is granted if it fits behind the
   * reservations of older waiters, else its class sleeps. Repeats until nothing is woken. Cost:
   * the classes a change could serve, the classes reserving on a changed machine, and the grants made.
   */
  #settle(): void {
    if (this.#settling) return;
    this.#settling = true;
    try {
      for (;;) {
        for (const m of this.#changed) for (const cls of this.#queue.reserved.classesOn(m)) this.#retarget(cls);
        this.#changed.clear();
        for (const m of this.#touched) {
          if (!this.machines.has(m)) continue;
          for (const cls of this.#queue.servable(m.books.freeGpus, m.books.freeCpus)) {
            if (eligible(m, cls.ask) && m.books.fitsNow(cls.amount)) this.#woken.add(cls);
          }
        }
        this.#touched.clear();
        let next: Waiter | undefined;
        for (const cls of this.#woken) {
          if (!cls.head) this.#woken.delete(cls);
          else if (!next || cls.head.seq < next.seq) next = cls.head;
        }
        if (!next) return;
        const w = next;
        const c = chooseNow(this.machines, w.ask, w.cls.amount, (m) => this.#queue.reserved.fitsBehind(m, w));
        if (!c) {
          this.#woken.delete(w.cls);
          continue;
        }
        const { amount, clamped } = w.cls;
        this.#unwait(w);
        w.resolve(this.#grant(w.claimId, w.ask, amount, clamped, c.machine, c.fellBack));
      }
    } finally {
      this.#settling = false;
    }
  }

  /**
   * Fails waiters requiring a label whose machines left longer ago than the reconnect grace. A
   * timer may fire a little before the grace has passed by the wall clock (the event loop's
   * clock lags); such labels are checked again when their grace ends.
   */
  #expireLabels(): void {
    let again = Infinity;
    for (const cls of [...this.#queue.classes()]) {
      try {
        this.#checkLabel(cls.ask);
      } catch (err) {
        for (let w = cls.head; w; w = cls.head) this.#abandon(w, err);
        continue;
      }
      const gone = requires(cls.ask) && !this.machines.hasLabel(cls.ask.label) ? this.#detachedLabels.get(cls.ask.label) : undefined;
      if (gone !== undefined) again = Math.min(again, gone + this.#graceMs + 1 - Date.now());
    }
    if (again > 0 && again < Infinity) setTimeout(() => this.#expireLabels(), again).unref();
  }
}
