/**
 * Taking back what a cohort lent (SPEC Q3, issue 22 item 3): a waiter held by its cohort's quota while its tenant is
 * within its own nominal (the others borrowed its share) may preempt claims of cohort members that borrow, by the
 * rules of SPEC Q2 — on one machine where their going makes the ask fit behind the waiters ahead of it, the fewest
 * victims, then the lowest priority, then the youngest — but regardless of the priority order below its own: a claim
 * of a higher priority is never taken. A borrower gives back only what it borrowed: no victim set takes a member
 * below its nominal, and each victim holds a resource the ask needs. The set is taken only if, once it is gone (and
 * with the tenant's other waiters already reclaiming counted in), quota admits the ask. Cost: the held claims, once
 * per look.
 */
import { eligible } from './choose.js';
import { heldUsage } from './held.js';
import type { MachineEntry } from './machines.js';
import { type Candidate, type Choice, chooseVictims, fitsWithout, type Option } from './preempt-choice.js';
import type { Usage } from './quota.js';
import { type Held, placeable, type PlacerState } from './state.js';
import type { Waiter } from './waiting.js';

/** What may not be a victim: claims already told or damped, or held less than the minimum runtime. */
export interface Spared {
  told(h: Held): boolean;
  /** Claims granted after this (ms since the epoch) are too young. */
  youngSince: number;
}

/**
 * The victims whose going lets waiter `w` (asking `u`, with `pending` more already being reclaimed for its tenant)
 * take back its cohort's lent share, or undefined when none would. `going`: what victims already told give back, by
 * owner — `mine` for its tenant's reclaims (counted as gone for its quota), `all` reclaims (for the borrowers'
 * floor).
 */
export function reclaimVictims(
  s: PlacerState,
  w: Waiter,
  u: Usage,
  pending: Usage,
  going: { mine: ReadonlyMap<string, Usage>; all: ReadonlyMap<string, Usage> },
  spared: Spared,
): Choice | undefined {
  const { quotas } = s;
  const owner = w.ask.owner;
  const cohort = quotas.cohortOf(owner);
  const wanted = sum(u, pending);
  if (cohort === undefined || !quotas.withinNominal(owner, wanted)) return undefined;
  const byMachine = new Map<MachineEntry, Candidate[]>();
  const already = (b: string | undefined) => (b === undefined ? undefined : going.all.get(b));
  for (const h of s.held.values()) {
    const b = h.grant.ask.owner;
    if (b === owner || h.prio > w.prio || h.group || h.releasing || h.grant.allocation.gpuShare) continue;
    if (quotas.cohortOf(b) !== cohort || h.since > spared.youngSince || spared.told(h)) continue;
    const hu = heldUsage(h.grant.allocation);
    if (!givesBack(s, b, sum(already(b) ?? {}, hu), u)) continue;
    let list = byMachine.get(h.entry);
    if (!list) byMachine.set(h.entry, (list = []));
    list.push(h);
  }
  const options: Option[] = [];
  for (const [m, list] of byMachine) {
    if (!placeable(m) || !eligible(m, w.ask)) continue;
    const o = { m, list, held: s.queue.reserved.aheadOf(m, w), amount: w.cls.amount };
    if (fitsWithout(o, list)) options.push(o);
  }
  const best = chooseVictims(options);
  if (!best) return undefined;
  const gone = new Map(going.mine);
  const floor = new Map(going.all);
  for (const v of best.victims) {
    const b = v.grant.ask.owner!;
    gone.set(b, sum(gone.get(b) ?? {}, heldUsage(v.grant.allocation)));
    floor.set(b, sum(floor.get(b) ?? {}, heldUsage(v.grant.allocation)));
  }
  for (const [b, g] of floor) if (!givesBack(s, b, g)) return undefined; // would take b below its nominal
  return quotas.blockedWithout(owner, wanted, gone) === undefined ? best : undefined;
}

/**
 * True when `b` giving back `g` leaves it at or above its nominal in every resource its nominal names, and (given
 * `need`) `g` holds some of a resource `need` takes that `b` borrows.
 */
function givesBack(s: PlacerState, b: string | undefined, g: Usage, need?: Usage): boolean {
  let useful = need === undefined;
  for (const k in g) {
    if (!g[k]) continue;
    const borrowed = s.quotas.borrowed(b, k);
    if (s.quotas.quotaOf(b)?.nominal[k] !== undefined && g[k] > borrowed) return false;
    if (need?.[k] && borrowed > 0) useful = true;
  }
  return useful;
}

/** `a` + `b`, per resource (units). */
export function sum(a: Usage, b: Usage): Usage {
  const out = { ...a };
  for (const k in b) out[k] = (out[k] ?? 0) + b[k];
  return out;
}
