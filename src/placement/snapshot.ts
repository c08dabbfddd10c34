/**
 * A plain view of the placer's state for GetSnapshot and `berth status`.
 */
import type { TenantView } from './quota.js';
import type { Amount } from '../resources/books.js';
import type { HostInventory } from '../resources/inventory.js';
import type { MachineEntry, MachineSet } from './machines.js';
import { withReason, type ProvisionerView } from './provisioner.js';
import type { AllocationGrant, Grant, QueuedInfo } from './types.js';
import { queuedInfo } from './queued.js';
import type { GroupView } from './group-views.js';
import type { Waiter } from './waiting.js';

/** One machine's books. */
export interface MachineView {
  name: string;
  labels: string[];
  remote: boolean;
  total: HostInventory;
  free: Amount;
  freeGpuIds: number[];
  claims: number;
  maxParallel: number;
  version: string;
  /** A worker's link (SPEC S2): connected, or disconnected and held; undefined for the engine host. */
  state?: 'connected' | 'disconnected';
  /** While disconnected: ms left of its hold (0 otherwise). */
  holdLeftMs: number;
  /** GPUs held in shares now (SPEC P14), sorted by id: the id and the units of 1e-4 held of it. */
  gpuShares: [number, number][];
}

/** The whole placer state; times in ms. */
export interface PlacerSnapshot {
  machines: MachineView[];
  /** `owner`: the ask's owner (SPEC R7), so the server can hide others' claim ids. */
  waiting: {
    claimId: string;
    node: string;
    runId: string;
    label: string;
    reason: QueuedInfo;
    waitedMs: number;
    /** The machine it holds back resources on (SPEC P7); '' when none could ever hold it. */
    reservedOn: string;
    /** The ask was cut down to the best real machine (SPEC P5, P11). */
    clamped: boolean;
    owner?: string;
    /** Its priority (SPEC Q1; 0 when none) and the class it named or defaulted to. */
    priority: number;
    priorityClass?: string;
  }[];
  held: {
    claimId: string;
    node: string;
    runId: string;
    machine: string;
    allocation: AllocationGrant;
    heldMs: number;
    owner?: string;
    /** Its ask's priority (SPEC Q1; 0 when none). */
    priority: number;
    /** While it awaits its holder after its stream broke (SPEC S3): ms left of its hold (set by the server). */
    holdLeftMs?: number;
    /** While it is being preempted (SPEC Q2): the preemptor's claim id and the ms left of the grace. */
    preemptedBy?: string;
    preemptLeftMs?: number;
  }[];
  provisioners: ProvisionerView[];
  /** Cluster-wide pools (issue 23 item 1): name, total and free in units of 1e-4. */
  pools: { name: string; total: number; free: number }[];
  /** Groups, one entry each with their members (rule G1): held ones, then waiting ones in queue order. */
  groups?: GroupView[];
  /** Each tenant with a quota, its use against it (SPEC Q3); absent when no tenant has one. */
  tenants?: TenantView[];
}

/**
 * Builds the snapshot from the placer's parts. `lacking(w)`: the tail of a waiter's detail naming what it waits
 * for (lacking.ts), computed once per wait class.
 */
export function placerSnapshot(
  machines: MachineSet,
  waiters: readonly Waiter[],
  held: readonly { grant: Grant; entry: MachineEntry; since: number }[],
  provisioning: (claimId: string) => string | undefined,
  provisioners: ProvisionerView[],
  pools: PlacerSnapshot['pools'] = [],
  lacking: (w: Waiter) => string = () => '',
  preempting: (claimId: string) => { by: string; leftMs: number } | undefined = () => undefined,
): PlacerSnapshot {
  const now = Date.now();
  // Waiters of one class wait for the same thing: work out why once per class.
  const why = new Map<Waiter['cls'], QueuedInfo>();
  const reason = (w: Waiter, position: number): QueuedInfo => {
    let q = why.get(w.cls);
    if (!q) {
      q = queuedInfo(machines, w.claimId, w.ask, w.cls.amount, position);
      q.detail += lacking(w); // `: waiting for 40960 MB ram`, as the claim's Queued says (issue 23)
      why.set(w.cls, q);
    }
    if (w.requeued === undefined) return { ...q, claimId: w.claimId, position };
    // a preempted claim waiting again says so, as its stream's Queued did (SPEC Q2)
    const detail = `${w.requeued}; waiting again at its place: ${q.detail}`;
    return { ...q, claimId: w.claimId, position, requeued: true, detail };
  };
  return {
    machines: Array.from(machines.all(), (m) => ({
      name: m.spec.name,
      labels: [...m.spec.labels],
      remote: m.spec.remote,
      total: { ...m.books.total, gpuIds: [...m.books.total.gpuIds] },
      free: m.books.free,
      freeGpuIds: m.books.freeGpuIds(),
      claims: m.books.claims,
      maxParallel: m.spec.maxParallel ?? 0,
      version: m.spec.version ?? '',
      state: m.spec.remote ? (m.hold ? 'disconnected' : 'connected') : undefined,
      holdLeftMs: m.hold ? Math.max(0, m.hold.untilMs - now) : 0,
      gpuShares: m.books.sharedGpus(),
    })),
    waiting: waiters.map((w, i) => ({
      claimId: w.claimId,
      node: w.ask.node,
      runId: w.ask.runId,
      label: w.ask.label,
      reason: withReason(reason(w, i + 1), provisioning(w.claimId)),
      waitedMs: now - w.since,
      reservedOn: w.cls.target?.spec.name ?? '',
      clamped: w.cls.clamped,
      owner: w.ask.owner,
      priority: w.prio,
      priorityClass: w.ask.priorityClass,
    })),
    held: held.map((h) => {
      const p = preempting(h.grant.claimId);
      return {
        claimId: h.grant.claimId,
        node: h.grant.ask.node,
        runId: h.grant.ask.runId,
        machine: h.grant.machine,
        allocation: h.grant.allocation,
        heldMs: now - h.since,
        owner: h.grant.ask.owner,
        priority: h.grant.ask.priority ?? 0,
        ...(p ? { preemptedBy: p.by, preemptLeftMs: p.leftMs } : {}),
      };
    }),
    provisioners,
    pools,
  };
}
