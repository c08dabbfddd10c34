/**
 * Queue order (SPEC Q1): higher priority first, then arrival (P6/P7 within a priority). Every comparison of "who is
 * served first" in the placer goes through `ahead`, so reservations, wake-ups and groups agree on one order.
 */

/** Where a waiter stands: its priority (higher first) and its arrival number (smaller first). */
export interface Place {
  readonly prio: number;
  readonly seq: number;
}

/** True when `a` is served before `b`. */
export function ahead(a: Place, b: Place): boolean {
  return a.prio > b.prio || (a.prio === b.prio && a.seq < b.seq);
}

/** The place of something arriving now with priority `prio`: behind every waiter of its priority. */
export const arriving = (prio: number): Place => ({ prio, seq: Number.POSITIVE_INFINITY });
