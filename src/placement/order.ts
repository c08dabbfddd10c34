/**
 * Queue order (SPEC Q1): higher priority first; within a priority, with fair sharing on, the tenant with the lowest
 * weighted dominant share (fair-share.ts), then arrival (P6/P7 within a priority and tenant). Every comparison of
 * "who is served first" in the placer goes through `ahead`, so reservations, wake-ups and groups agree on one order.
 * Shares change as claims come and go, so the order between two tenants' waiters is read at the moment it is asked.
 */
import type { TenantShare } from './fair-share.js';

/** Where a waiter stands: its priority (higher first), its tenant's standing, its arrival number (smaller first). */
export interface Place {
  readonly prio: number;
  readonly seq: number;
  /** Its tenant's standing (fair sharing); absent for a place behind every waiter of its priority. */
  readonly fair?: TenantShare;
}

/** True when `a` is served before `b`: priority, then (between tenants) the lower share, then arrival. */
export function ahead(a: Place, b: Place): boolean {
  if (a.prio !== b.prio) return a.prio > b.prio;
  const fa = a.fair;
  const fb = b.fair;
  if (fa !== fb && fa !== undefined && fb !== undefined && fa.share !== fb.share) return fa.share < fb.share;
  return a.seq < b.seq;
}

/**
 * The place of something arriving now with priority `prio`: behind every waiter of its priority, or, given its
 * tenant's standing `fair`, behind those of its own tenant and of tenants with no higher share.
 */
export const arriving = (prio: number, fair?: TenantShare): Place => ({
  prio,
  seq: Number.POSITIVE_INFINITY,
  ...(fair ? { fair } : {}),
});
