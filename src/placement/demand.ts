/**
 * The placer's side of provisioning (SPEC P10, V2–V4): the demand it tells the provisioning loop after every
 * change of the books, why a waiter waits (with the provisioner's reason), and the two callbacks the loop may
 * call back: retire an idle machine, re-send Queued to waiters whose reason changed.
 */
import { amountOf, anyCanEverHold } from './choose.js';
import { lackingDetail } from './lacking.js';
import { withReason, type DemandView, type Unmet } from './provisioner.js';
import { queuedInfo } from './queued.js';
import { placeable, type PlacerState } from './state.js';
import type { NormalizedAsk, QueuedInfo } from './types.js';
import type { Waiter } from './waiting.js';

/** Demand for provisioning, and the callbacks it binds. */
export class Demand {
  /** The waiting groups (groups.ts), set by the placer: their members count as demand too (rule G5). */
  groups?: () => Iterable<{ id: string; asks: readonly NormalizedAsk[] }>;

  /** @param detach the placer's detach: a retired machine leaves the books through it. */
  constructor(
    readonly s: PlacerState,
    readonly detach: (name: string, why: string) => void,
  ) {}

  /**
   * Tells provisioning the demand (SPEC V2): the waiters (and waiting groups' members) no attached machine can ever
   * hold; one ask per other wait class; attached workers' claim counts. Cost: per wait class plus unmet waiters plus
   * waiting groups' members.
   */
  plan(): void {
    const prov = this.s.prov;
    if (!prov) return;
    const unmet: Unmet[] = [];
    const waiting: DemandView['waiting'] = [];
    for (const cls of this.s.queue.classes()) {
      if (cls.quotaHeld) continue; // quota, not capacity, holds it (SPEC Q3): a new machine would not help
      if (anyCanEverHold(this.s.machines, cls.ask, cls.amount)) waiting.push({ ask: cls.ask, amount: cls.amount });
      else for (let w = cls.head; w; w = w.next) unmet.push({ claimId: w.claimId, ask: w.ask, amount: cls.amount });
    }
    // a waiting group's members no attached machine could ever hold: a started machine may (groups are not clamped)
    for (const g of this.groups?.() ?? []) {
      g.asks.forEach((ask, i) => {
        const amount = amountOf(ask);
        if (!anyCanEverHold(this.s.machines, ask, amount)) unmet.push({ claimId: `${g.id}/${i}`, ask, amount });
      });
    }
    const machines: DemandView['machines'] = [];
    for (const m of this.s.machines.all())
      if (m.spec.remote && placeable(m)) machines.push({ name: m.spec.name, claims: m.books.claims }); // S6
    prov.plan({ unmet, waiting, machines });
  }

  /**
   * Why `w` waits (P6) and for which short dimension (lacking.ts), with the provisioner's reason when it waits for
   * a machine being started (P10).
   */
  queuedInfo(w: Waiter, position: number): QueuedInfo {
    const q = queuedInfo(this.s.machines, w.claimId, w.ask, w.cls.amount, position);
    q.detail += lackingDetail(this.s, w.ask, w.cls.amount, w);
    if (w.ask.requeuedFrom !== undefined) q.requeued = true; // a preempted claim waiting again (SPEC Q2)
    return withReason(q, this.s.prov?.reason(w.claimId));
  }

  /**
   * Provisioning gives a machine back: it leaves the books now, unless it is attached and holds a claim (SPEC V3).
   * One restored from the journal whose worker is not back leaves with its claims (lost).
   */
  retire(name: string, why: string): boolean {
    const entry = this.s.machines.get(name);
    if (entry?.books.claims && placeable(entry)) return false; // a machine not back leaves, claims and all
    if (entry) this.detach(name, why);
    return true;
  }

  /** Sends waiting claims whose provisioning reason changed a fresh Queued (SPEC V4). */
  requeue(claimIds: string[]): void {
    const ids = new Set(claimIds);
    let position = 0;
    for (const w of this.s.queue.inOrder(this.s.fair.active)) {
      position++;
      if (ids.has(w.claimId)) w.notify?.(this.queuedInfo(w, position));
    }
  }
}
