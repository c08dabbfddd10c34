/**
 * The quota gate of the settle loop (SPEC Q3): a wait class whose tenant's quota cannot take one more of its amount
 * is held (it reserves nothing and is not granted, so a tenant at its quota holds back no one else's claims) and is
 * freed, its reservation re-made and its head woken, as soon as its tenant's use (or its cohort's) leaves room.
 * Re-checked eagerly, per tenant whose use changed: the classes of its cohort, not the queue.
 */
import { reservationTarget } from './choose.js';
import { askUsage } from './held.js';
import type { PlacerState } from './state.js';
import type { WaitClass } from './waiting.js';

/** Why `cls`'s tenant cannot take one more of its amount now, or undefined (no quota, or room). */
export function quotaBlocked(s: PlacerState, cls: WaitClass): string | undefined {
  if (!s.quotas.active || cls.ask.owner === undefined) return undefined;
  return s.quotas.blocked(cls.ask.owner, askUsage(cls.amount, cls.ask.pools));
}

/**
 * Holds `cls` for `why`: its reservation goes (its old target may serve others now), and it sleeps. Returns true
 * when it was not held before (its members are then told why they wait now).
 */
export function holdForQuota(s: PlacerState, cls: WaitClass, why: string): boolean {
  const held = cls.quotaHeld !== undefined;
  cls.quotaHeld = why;
  if (held) return false;
  cls.pinned = false; // a preemptor over quota holds no room on its victims' machine (SPEC Q2)
  const old = cls.target;
  s.queue.setTarget(cls, undefined);
  if (old) s.touched.add(old);
  s.woken.delete(cls);
  return true;
}

/**
 * Re-checks the classes of every tenant whose use changed (and of its cohort): holds or frees each. Returns the
 * classes it newly held.
 */
export function recheckQuotas(s: PlacerState): WaitClass[] {
  const newlyHeld: WaitClass[] = [];
  const tenants = new Set<string>();
  for (const t of s.quotaDirty) for (const name of s.quotas.affected(t)) tenants.add(name);
  s.quotaDirty.clear();
  for (const name of tenants) {
    for (const cls of s.queue.classesOf(name)) {
      if (cls.group) continue;
      const why = quotaBlocked(s, cls);
      if (why) {
        if (holdForQuota(s, cls, why)) newlyHeld.push(cls);
      } else if (cls.quotaHeld !== undefined) {
        cls.quotaHeld = undefined;
        s.queue.setTarget(cls, reservationTarget(s.machines, cls.ask, cls.amount));
        s.woken.add(cls);
      }
    }
  }
  return newlyHeld;
}
