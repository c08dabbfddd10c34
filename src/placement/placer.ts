/**
 * The placer: claims as leases across every machine (SPEC P1–P10). Decisions run on the event
 * loop without locks; each waiter carries an AbortSignal; every change of the books wakes the
 * waiters (P7); release is idempotent (P8).
 */
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import { describeAmount, type Amount } from '../resources/books.js';
import { amountOf, anyCanEverHold, chooseNow, clampTarget, type Reservations } from './choose.js';
import { allocationEnv } from './env.js';
import { MachineSet, type MachineEntry } from './machines.js';
import type { DemandView, Provisioning } from './provisioner.js';
import { placerSnapshot, type PlacerSnapshot } from './snapshot.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from './types.js';
import { queuedInfo, reservationTarget, reserve, type Waiter } from './waiting.js';

/** Placer construction options. `reconnectGraceMs`: how long a detached label still counts (default 30 000). */
export interface PlacerOptions {
  engine: MachineSpec;
  events: EventBus;
  reconnectGraceMs?: number;
  /** The provisioning loop (SPEC P10, V2): told the demand after every change of the books. */
  provisioning?: Provisioning;
}

interface Held {
  grant: Grant;
  entry: MachineEntry;
  lost: AbortController;
  since: number;
}

/** Keeps the books of every machine and grants claims. */
export class Placer {
  readonly machines = new MachineSet();
  readonly #events: EventBus;
  readonly #graceMs: number;
  readonly #prov?: Provisioning;
  readonly #waiters: Waiter[] = [];
  readonly #held = new Map<string, Held>();
  readonly #detachedLabels = new Map<string, number>();
  #reserved: Reservations = new Map();
  #ids = 0;

  constructor(opts: PlacerOptions) {
    this.#events = opts.events;
    this.#graceMs = opts.reconnectGraceMs ?? 30_000;
    this.#prov = opts.provisioning;
    this.machines.add({ ...opts.engine, remote: false });
    this.#prov?.bind({ retire: (name, why) => this.#retire(name, why), requeue: (ids) => this.#requeue(ids) });
  }

  /** A worker's books join (SPEC P1); the same name replaces the old machine (W1). Wakes waiters (P7). */
  attach(m: MachineSpec): void {
    if (this.machines.get(m.name)) this.detach(m.name, `worker ${m.name} was replaced by a new stream`);
    this.machines.add({ ...m, remote: true });
    this.#events.emit({ kind: 'worker_attached', machine: m.name, detail: `${m.name}: ${m.inventory.cpus} cpu(s), ${m.inventory.gpuIds.length} gpu(s)${m.labels.length ? `, labels ${m.labels.join(',')}` : ''}` });
    this.#pump();
  }

  /**
   * A machine leaves with its books (SPEC W3): each claim on it loses its lease (`lost` aborts
   * with UNAVAILABLE "worker <name> went away") and waiters are woken. No-op for unknown names.
   */
  detach(name: string, reason = `worker ${name} went away`): void {
    const entry = this.machines.get(name);
    if (!entry || !entry.spec.remote) return;
    this.machines.remove(name);
    for (const label of entry.spec.labels) this.#detachedLabels.set(label, Date.now());
    for (const [id, h] of this.#held) {
      if (h.entry !== entry) continue;
      this.#held.delete(id);
      h.lost.abort(new BerthError('unavailable', `${reason}: claim ${id} on ${name} lost`));
      this.#events.emit({ kind: 'claim_lost', claimId: id, machine: name, node: h.grant.ask.node, runId: h.grant.ask.runId, detail: reason });
    }
    this.#events.emit({ kind: 'worker_detached', machine: name, detail: reason });
    if (entry.spec.labels.length) setTimeout(() => this.#expireLabels(), this.#graceMs + 1).unref();
    this.#pump();
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
    const { amount, clamped } = this.#fit(ask);
    const now = chooseNow(this.machines, ask, amount, this.#reserved);
    if (now) return Promise.resolve(this.#grant(claimId, ask, amount, clamped, now.machine, now.fellBack));
    return new Promise<Grant>((resolve, reject) => {
      const onAbort = () => this.#abandon(w, opts.signal.reason);
      const w: Waiter = {
        claimId, ask, amount, clamped, since: Date.now(), signal: opts.signal, resolve, reject,
        detach: () => opts.signal.removeEventListener('abort', onAbort), notify: opts.onQueued,
      };
      opts.signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(w);
      const info = this.#queuedInfo(w, this.#waiters.length);
      this.#events.emit({ kind: 'node_queued', claimId, node: ask.node, runId: ask.runId, machine: info.bestMachine, detail: info.detail });
      opts.onQueued?.(info);
      this.#pump();
    });
  }

  /** Gives a claim back (SPEC P8). Idempotent: false when the id holds nothing. Wakes waiters. */
  release(claimId: string, why = 'released'): boolean {
    const h = this.#held.get(claimId);
    if (!h) return false;
    this.#held.delete(claimId);
    this.machines.update(h.entry, () => h.entry.books.give(claimId));
    this.#events.emit({ kind: 'claim_released', claimId, machine: h.grant.machine, node: h.grant.ask.node, runId: h.grant.ask.runId, detail: why });
    this.#pump();
    return true;
  }

  /** The held claim `claimId`, if any. */
  get(claimId: string): Grant | undefined {
    return this.#held.get(claimId)?.grant;
  }

  /** Abandons the waiting claims of `runId` (Cancel); returns how many. */
  cancelRun(runId: string): number {
    const mine = this.#waiters.filter((w) => w.ask.runId === runId);
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
    return this.#prov?.covers(ask) ? describeAmount(amount) : '';
  }

  /** The books, waiting claims and held claims. */
  snapshot(): PlacerSnapshot {
    return placerSnapshot(this.machines, this.#waiters, [...this.#held.values()], (w, i) => this.#queuedInfo(w, i), this.#prov?.statuses() ?? []);
  }

  /** Checks every machine's books and that held claims match them. @throws BooksError. */
  checkInvariants(): void {
    let claims = 0;
    for (const m of this.machines.all()) {
      m.books.check(m.spec.name);
      claims += m.books.claims;
    }
    if (claims !== this.#held.size) throw new Error(`books hold ${claims} claims, placer ${this.#held.size}`);
    for (const w of this.#waiters) if (this.#held.has(w.claimId)) throw new Error(`claim ${w.claimId} both waiting and held`);
  }

  #checkLabel(ask: NormalizedAsk): void {
    if (ask.policy !== 'require' || ask.label === '' || this.machines.hasLabel(ask.label)) return;
    if (this.#prov?.covers(ask)) return;
    const gone = this.#detachedLabels.get(ask.label);
    if (gone !== undefined && Date.now() - gone <= this.#graceMs) return;
    throw new BerthError('failed_precondition', `no machine carries label '${ask.label}' and no provisioner can start one`);
  }

  /** The amount to wait for: the ask, or clamped to the best real machine (P5) unless a provisioner covers it (P10). */
  #fit(ask: NormalizedAsk): { amount: Amount; clamped: boolean } {
    const amount = amountOf(ask);
    if (anyCanEverHold(this.machines, ask, amount)) return { amount, clamped: false };
    if (this.#prov?.covers(ask)) return { amount, clamped: false }; // the provisioning loop plans it (#pump)
    const t = clampTarget(this.machines, ask);
    if (!t) return { amount, clamped: false };
    this.#events.emit({ kind: 'node_clamped', node: ask.node, runId: ask.runId, machine: t.machine.spec.name, detail: `${describeAmount(amount)} → ${describeAmount(t.amount)} (best machine: ${t.machine.spec.name})` });
    return { amount: t.amount, clamped: true };
  }

  #grant(claimId: string, ask: NormalizedAsk, amount: Amount, clamped: boolean, entry: MachineEntry, fellBack: boolean): Grant {
    let holding!: ReturnType<MachineEntry['books']['take']>;
    this.machines.update(entry, () => (holding = entry.books.take(claimId, amount)));
    const lost = new AbortController();
    const grant: Grant = {
      claimId, machine: entry.spec.name, remote: entry.spec.remote, clamped, fellBack, ask, lost: lost.signal,
      allocation: { cpus: holding.cpus, gpuIds: holding.gpuIds, ramMb: holding.ramMb, env: allocationEnv(holding.cpus, holding.gpuIds, ask.env) },
    };
    this.#held.set(claimId, { grant, entry, lost, since: Date.now() });
    this.#events.emit({ kind: 'node_placed', claimId, node: ask.node, runId: ask.runId, machine: entry.spec.name, detail: `${describeAmount(amount)} on ${entry.spec.name}${holding.gpuIds.length ? ` (gpu ${holding.gpuIds.join(',')})` : ''}${fellBack ? ', fell back' : ''}${clamped ? ', clamped' : ''}` });
    return grant;
  }

  #abandon(w: Waiter, reason: unknown): void {
    const i = this.#waiters.indexOf(w);
    if (i < 0) return;
    this.#waiters.splice(i, 1);
    w.detach();
    this.#events.emit({ kind: 'node_abandoned', claimId: w.claimId, node: w.ask.node, runId: w.ask.runId, detail: reason instanceof Error ? reason.message : 'abandoned' });
    w.reject(reason);
    this.#pump();
  }

  /** Grants waiters in arrival order; a waiter that cannot be granted reserves what it asks on its best machine (P7). */
  #pump(): void {
    const reserved: Reservations = new Map();
    for (const w of [...this.#waiters]) {
      if (!anyCanEverHold(this.machines, w.ask, w.amount) && !this.#prov?.covers(w.ask)) {
        const refit = this.#fit(w.ask);
        w.amount = refit.amount;
        w.clamped = refit.clamped;
      }
      const c = chooseNow(this.machines, w.ask, w.amount, reserved);
      if (c) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.detach();
        w.resolve(this.#grant(w.claimId, w.ask, w.amount, w.clamped, c.machine, c.fellBack));
        continue;
      }
      const target = reservationTarget(this.machines, w);
      if (target) reserve(reserved, target, w.amount);
    }
    this.#reserved = reserved;
    this.#prov?.plan(this.#demand());
  }

  /** The demand for provisioning (SPEC V2): waiters no attached machine can ever hold; attached workers' claim counts. */
  #demand(): DemandView {
    const unmet = this.#waiters.filter((w) => !anyCanEverHold(this.machines, w.ask, w.amount)).map((w) => ({ claimId: w.claimId, ask: w.ask, amount: w.amount }));
    const machines = this.machines.all().filter((m) => m.spec.remote).map((m) => ({ name: m.spec.name, claims: m.books.claims }));
    return { unmet, machines };
  }

  /** Why `w` waits (P6), with the provisioner's reason when it waits for a machine being started (P10). */
  #queuedInfo(w: Waiter, position: number): QueuedInfo {
    const info = queuedInfo(this.machines, w, position);
    const why = this.#prov?.reason(w.claimId);
    return why ? { ...info, detail: `${info.detail}; ${why}` } : info;
  }

  /** Provisioning gives an idle machine back: it leaves the books now, unless it holds a claim (SPEC V3). */
  #retire(name: string, why: string): boolean {
    const entry = this.machines.get(name);
    if (entry?.books.claims) return false;
    if (entry) this.detach(name, why);
    return true;
  }

  /** Sends waiting claims whose provisioning reason changed a fresh Queued (SPEC V4). */
  #requeue(claimIds: string[]): void {
    const ids = new Set(claimIds);
    this.#waiters.forEach((w, i) => {
      if (ids.has(w.claimId)) w.notify?.(this.#queuedInfo(w, i + 1));
    });
  }

  /** Fails waiters requiring a label whose machines left longer ago than the reconnect grace. */
  #expireLabels(): void {
    for (const w of [...this.#waiters]) {
      try {
        this.#checkLabel(w.ask);
      } catch (err) {
        this.#abandon(w, err);
      }
    }
  }
}
