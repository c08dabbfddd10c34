/**
 * Pools in placement (issue 23 item 1): which names of an ask are cluster-wide pools, whether they fit behind what
 * waiting claims hold back (a pool is reserved like a machine, SPEC P7: a younger claim never takes the licenses an
 * older waiter waits for), and which wait classes a pool's release may serve (SPEC P12).
 */
import type { Named } from '../resources/quantity.js';
import { ahead, type Place } from './order.js';
import { priorityOf } from './priority.js';
import { arrivingAt, type PlacerState } from './state.js';
import type { NormalizedAsk } from './types.js';
import type { WaitClass } from './waiting.js';

/** `ask` with the names that are pools moved from `resources` to `pools`; the same object when there are none. */
export function splitPools(s: PlacerState, ask: NormalizedAsk): NormalizedAsk {
  const r = ask.resources;
  if (!r || s.pools.empty) return ask;
  let machine: Named | undefined;
  let pools: Named | undefined;
  for (const k in r) {
    if (s.pools.has(k)) (pools ??= {})[k] = r[k];
    else (machine ??= {})[k] = r[k];
  }
  if (!pools) return ask;
  const { resources: _, ...rest } = ask;
  return machine ? { ...rest, resources: machine, pools } : { ...rest, pools };
}

/**
 * What waiting claims hold back of the pools `want` names: every member of every class asking one (only those ahead
 * of `older`, when given: SPEC Q1).
 */
export function heldBack(s: PlacerState, want: Named, older?: Place): Named | undefined {
  let r: Named | undefined;
  for (const cls of s.queue.classes()) {
    const p = cls.ask.pools;
    if (!p || !shares(p, want)) continue;
    for (let w = cls.head; w && (!older || ahead(w, older)); w = w.next) {
      r ??= {};
      for (const k in p) r[k] = (r[k] ?? 0) + p[k];
    }
  }
  return r;
}

function shares(x: Named, y: Named): boolean {
  for (const k in x) if (y[k]) return true;
  return false;
}

/** True when a new claim's pools fit behind every waiter ahead of it (nothing asked: true). Cost: per wait class. */
export function poolsFitNew(s: PlacerState, ask: NormalizedAsk): boolean {
  if (!ask.pools) return true;
  const prio = priorityOf(ask);
  const all = !s.queue.lowerWaits(prio) && !s.fair.active;
  return s.pools.fits(ask.pools, heldBack(s, ask.pools, all ? undefined : arrivingAt(s, prio, ask.owner)));
}

/** True when waiter `w`'s pools fit behind the waiters ahead of it. */
export function poolsFitBehind(s: PlacerState, w: Place & { ask: NormalizedAsk }): boolean {
  const p = w.ask.pools;
  return !p || s.pools.fits(p, heldBack(s, p, w));
}

/** Wakes the wait classes asking any of the pools `names` (one was given back). Cost: per wait class. */
export function wakePools(s: PlacerState, names: readonly string[]): void {
  if (names.length === 0) return;
  for (const cls of s.queue.classes() as Iterable<WaitClass>) {
    const p = cls.ask.pools;
    if (p && names.some((n) => p[n])) s.woken.add(cls);
  }
}
