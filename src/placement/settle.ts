/**
 * The settle/wake loop (SPEC P7, P12): after a change of books, classes reserving on a changed machine re-choose
 * their target, classes a touched machine's free room could serve wake (looked up by amount, not by walking the
 * queue), and the oldest woken head is granted if it fits behind the reservations of older waiters. Also how a
 * waiter leaves the queue (granted, abandoned) and how a class moves its reservation.
 */
import { chooseNow, eligible, reservationTarget } from './choose.js';
import type { Demand } from './demand.js';
import { grant } from './grant.js';
import { ahead, type Place } from './order.js';
import { poolsFitBehind } from './pool-fit.js';
import { holdForQuota, quotaBlocked, recheckQuotas } from './quota-gate.js';
import { placeable, type PlacerState, syncShares } from './state.js';
import type { WaitClass, Waiter } from './waiting.js';

/** Brings the queue to rest after each change. */
export class Settler {
  #settling = false;
  /** Waiting groups (groups.ts): given their turn among single claims by arrival (rule G4). */
  groups?: { dirty: boolean; first(): Place | undefined; pass(): void };

  constructor(
    readonly s: PlacerState,
    readonly demand: Demand,
  ) {}

  /**
   * Brings the queue to rest after a change (P7, P12): classes reserving on a changed machine
   * re-choose their target; classes a touched machine's free room could serve wake; the oldest woken
   * head is granted if it fits behind the reservations of older waiters, else its class sleeps. Repeats
   * until nothing is woken, then tells provisioning the demand. Cost: the classes a change could serve,
   * the classes reserving on a changed machine, and the grants made.
   */
  settle(): void {
    if (this.#settling) return;
    this.#settling = true;
    const { machines, queue, changed, touched, woken } = this.s;
    try {
      for (;;) {
        if (this.s.quotaDirty.size) this.#told(recheckQuotas(this.s)); // a tenant's use changed (SPEC Q3)
        syncShares(this.s);
        if (this.s.fair.changed.size) this.#reorder();
        for (const m of changed) for (const cls of queue.reserved.classesOn(m)) if (!cls.group) this.retarget(cls);
        changed.clear();
        for (const m of touched) {
          if (!machines.has(m)) continue;
          for (const cls of queue.servable(m.books.freeGpus, m.books.freeCpus)) {
            if (!cls.quotaHeld && eligible(m, cls.ask) && m.books.fitsNow(cls.amount)) woken.add(cls);
          }
        }
        if (touched.size && this.groups) this.groups.dirty = true;
        touched.clear();
        let next: Waiter | undefined;
        for (const cls of woken) {
          if (!cls.head || cls.quotaHeld) woken.delete(cls);
          else if (!next || ahead(cls.head, next)) next = cls.head;
        }
        const g = this.groups;
        if (g?.dirty) {
          const first = g.first();
          if (first === undefined) g.dirty = false;
          else if (!next || ahead(first, next)) {
            g.pass();
            continue;
          }
        }
        if (!next) return;
        const w = next;
        const overQuota = quotaBlocked(this.s, w.cls); // in the same step as placement (SPEC Q3)
        if (overQuota) {
          if (holdForQuota(this.s, w.cls, overQuota)) this.#told([w.cls]);
          continue;
        }
        const c = this.#choose(w);
        if (!c) {
          woken.delete(w.cls);
          continue;
        }
        const { amount, clamped } = w.cls;
        this.unwait(w);
        w.resolve(grant(this.s, w.claimId, w.ask, amount, clamped, c.machine, c.fellBack, w.since, w.seq));
      }
    } finally {
      this.#settling = false;
      this.demand.plan();
    }
  }

  /** Tells each member of `classes`, newly held by quota, a fresh Queued saying so (SPEC Q3, V4). */
  #told(classes: readonly WaitClass[]): void {
    for (const cls of classes) {
      for (let w = cls.head; w; w = w.next) {
        if (!w.notify) continue;
        const info = this.demand.queuedInfo(w, this.s.queue.positionAt(w.prio));
        info.detail = `held by quota: ${cls.quotaHeld}`;
        w.notify(info);
      }
    }
  }

  /**
   * Tenants' shares changed, so the order between their waiters may have (SPEC Q1). Only a tenant whose share passed
   * another's matters: when it fell, its classes that only reservations held back are woken (they may stand ahead
   * now); when it rose, the machines its classes reserve on are looked at again (others may stand ahead of it there).
   */
  #reorder(): void {
    const { fair, queue, woken, touched } = this.s;
    for (const t of fair.changed) {
      if (!fair.reordered(t)) continue;
      const fell = t.share < t.before;
      for (const cls of queue.classesOf(t.name)) {
        if (cls.group || cls.quotaHeld) continue;
        if (fell && cls.heldBack) woken.add(cls);
        else if (!fell && cls.target) touched.add(cls.target);
      }
    }
    fair.changed.clear();
  }

  /**
   * Where head `w` can be granted now, behind what waiters ahead of it hold back (machines and pools), or undefined.
   * With fair sharing on it also marks on its class whether only those reservations stood in the way
   * (`heldBack`, SPEC Q1): then a fall of its tenant's share may let it through.
   */
  #choose(w: Waiter): ReturnType<typeof chooseNow> {
    const { machines, queue, fair, pools } = this.s;
    if (!fair.active) {
      if (!poolsFitBehind(this.s, w)) return undefined;
      return chooseNow(machines, w.ask, w.cls.amount, (m) => queue.reserved.fitsBehind(m, w) && placeable(m));
    }
    const cls = w.cls;
    if (!poolsFitBehind(this.s, w)) {
      cls.heldBack = pools.fits(w.ask.pools!);
      return undefined;
    }
    let heldBack = false;
    const c = chooseNow(machines, w.ask, cls.amount, (m) => {
      if (!placeable(m)) return false;
      if (queue.reserved.fitsBehind(m, w)) return true;
      heldBack ||= m.books.fitsNow(cls.amount);
      return false;
    });
    cls.heldBack = heldBack;
    return c;
  }

  /**
   * Points `cls` at the machine it is closest to fitting, keeping its target when that is as close; a preemptor's
   * class (`pinned`) keeps its machine while that machine is attached.
   */
  retarget(cls: WaitClass): void {
    const old = cls.target;
    if (cls.pinned && old && this.s.machines.has(old)) return; // a preemptor's room stays reserved (SPEC Q2)
    if (cls.quotaHeld) return; // reserves nowhere while its quota holds it (SPEC Q3)
    const t = reservationTarget(this.s.machines, cls.ask, cls.amount, old);
    if (t === old) return;
    this.s.queue.setTarget(cls, t);
    if (old) this.s.touched.add(old);
  }

  /** Takes `w` out of the queue; what its class held back on its target becomes room. False when not waiting. */
  unwait(w: Waiter): boolean {
    const target = w.cls.target;
    if (!this.s.queue.remove(w)) return false;
    w.detach();
    if (w.reclaiming) {
      this.s.quotas.reserve(w.ask.owner!, w.reclaiming, -1); // granted or gone: what it reserved is free (Q3)
      this.s.quotaDirty.add(w.ask.owner!);
    }
    if (target) this.s.touched.add(target);
    return true;
  }

  /** `w` stops waiting, rejected with `reason` (cancel, abort, a failed refit): node_abandoned, then settle. */
  abandon(w: Waiter, reason: unknown): void {
    if (!this.unwait(w)) return;
    this.s.events.emit({
      kind: 'node_abandoned',
      claimId: w.claimId,
      node: w.ask.node,
      runId: w.ask.runId,
      detail: reason instanceof Error ? reason.message : 'abandoned',
      durationMs: Date.now() - w.since,
    });
    w.reject(reason);
    this.settle();
  }
}
