/**
 * The placer's shared state (SPEC P1, P7, P8, P12): the machines and their books, the waiting queue, the
 * held claims, the cluster-wide pools, and the marks a change of books leaves for the settle loop (settle.ts).
 * The placer's parts
 * (claims, settle, refit, label grace, demand) each read and change it; only they do.
 */
import type { EventBus } from '../events.js';
import type { Amount } from '../resources/books.js';
import { PoolBooks } from '../resources/pools.js';
import type { Lease } from './lease.js';
import { MachineSet, type MachineEntry } from './machines.js';
import { FairShare } from './fair-share.js';
import { arriving, type Place } from './order.js';
import { HeldClaims } from './held.js';
import { PriorityBook } from './priority.js';
import { QuotaBook } from './quota.js';
import type { Provisioning } from './provisioner.js';
import { WaitQueue, type WaitClass } from './waiting.js';

/** A granted claim in the books: its lease, its machine and since when (ms since the epoch). */
export interface Held {
  grant: Lease;
  entry: MachineEntry;
  since: number;
  /** Its priority (SPEC Q1), kept here so preemption's scan of the held claims reads no further (preempt.ts). */
  prio: number;
  /** Its arrival number (waiting.ts): a preempted claim that requeues waits again there (SPEC Q2); absent = none. */
  seq?: number;
  /** Set for a member of a group (groups.ts): released and lost only with its whole group (rule G1). */
  group?: string;
  /** Released, its books kept until the runs inside it are gone (SPEC R5). */
  releasing?: boolean;
}

/** What every part of the placer shares. */
export class PlacerState {
  readonly machines = new MachineSet();
  readonly queue = new WaitQueue();
  /** Held claims by id. */
  readonly held: HeldClaims;
  /** Tenant quotas and what each tenant holds (SPEC Q3). */
  readonly quotas = new QuotaBook();
  /** Tenants' shares for fair sharing (SPEC Q1): read by the queue order while some tenant has a weight. */
  readonly fair = new FairShare();
  /** The `machines.totalsVersion` the shares were last computed against (-1: recompute; `syncShares`). */
  sharesAt = -1;
  /** Tenants whose use changed since the settle loop last re-checked their classes' quota (quota-gate.ts). */
  readonly quotaDirty = new Set<string>();
  /** Machines whose free capacity changed or that left: classes reserving there re-choose. */
  readonly changed = new Set<MachineEntry>();
  /** Machines with more room than before (release, attach, a reservation gone): may serve a waiter. */
  readonly touched = new Set<MachineEntry>();
  /** Classes whose head may be grantable now. */
  readonly woken = new Set<WaitClass>();
  /** How many held claims are group members (groups.ts): the invariant check counts them without a walk. */
  groupMembers = 0;
  /** Set by `Placer.freeze` (SPEC S5): nothing is released or detached any more. */
  frozen = false;
  /** The cluster-wide pools (config `pools`, issue 23 item 1). */
  readonly pools: PoolBooks;
  /** The config's priority classes (SPEC Q1). */
  readonly priorities = new PriorityBook();

  /** @param pools pool name → size in units of 1e-4 */
  constructor(
    readonly events: EventBus,
    readonly prov: Provisioning | undefined,
    pools?: Record<string, number>,
  ) {
    this.pools = new PoolBooks(pools);
    this.held = new HeldClaims(this.quotas, (owner) => this.quotaDirty.add(owner), this.fair);
  }
}

/** False for a disconnected (held) machine, restored or not (SPEC S2, S6): nothing new goes there. */
export function placeable(m: MachineEntry): boolean {
  return m.hold === undefined;
}

/** Brings the tenants' shares up to the machines and pools in the books (fair sharing, SPEC Q1). */
export function syncShares(s: PlacerState): void {
  if (!s.fair.active || s.sharesAt === s.machines.totalsVersion) return;
  s.sharesAt = s.machines.totalsVersion;
  s.fair.setTotals({ ...s.machines.totals, ...s.pools.total });
}

/**
 * Where a new claim of priority `prio` and owner `owner` stands (SPEC Q1): behind every waiter of its priority, or
 * with fair sharing on, behind those of its own tenant and of tenants whose share is not higher.
 */
export function arrivingAt(s: PlacerState, prio: number, owner: string | undefined): Place {
  return s.fair.active ? arriving(prio, s.fair.of(owner)) : arriving(prio);
}

/**
 * True when a new claim of priority `prio` (of `owner`) can take `amount` on `m` now (SPEC P7, Q1): it leaves what
 * waiters ahead of it hold back there — all of it, unless something of a lower priority waits or fair sharing is on.
 */
export function fitsNew(s: PlacerState, m: MachineEntry, amount: Amount, prio: number, owner?: string): boolean {
  const q = s.queue;
  return q.lowerWaits(prio) || s.fair.active
    ? q.reserved.fitsAhead(m, amount, arrivingAt(s, prio, owner))
    : m.books.fitsNow(amount, q.reserved.on(m));
}
