/**
 * Domain shapes → berth.v1 messages. Only the edge knows the wire types' field names.
 */
import {
  MachineState,
  ProvisionedState,
  type ClusterStatus,
  type GetSnapshotResponse,
  type Granted,
  type Preempting,
  type Queued,
  type WatchEventsResponse,
} from '../../generated/ts/berth/v1/placement.js';
import type { Resources } from '../../generated/ts/berth/v1/resources.js';
import type { BerthEvent, QueuedFacts } from '../events.js';
import type { Amount } from '../resources/books.js';
import { fromUnits, namedPlain, type Named } from '../resources/quantity.js';
import type { PlacerSnapshot } from '../placement/snapshot.js';
import type { PreemptionNotice } from '../placement/preempt.js';
import type { Grant, QueuedInfo } from '../placement/types.js';
import type { ClusterInfo } from '../ha/cluster.js';
import { toGroupView } from './group-convert.js';

/** Provisioned machine state → berth.v1.ProvisionedState. */
const PROVISIONED_STATE = {
  starting: ProvisionedState.PROVISIONED_STATE_STARTING,
  running: ProvisionedState.PROVISIONED_STATE_RUNNING,
  idle: ProvisionedState.PROVISIONED_STATE_IDLE,
  stopping: ProvisionedState.PROVISIONED_STATE_STOPPING,
} as const;

/** A worker's link → berth.v1.MachineState (SPEC S2). */
const MACHINE_STATE = {
  connected: MachineState.MACHINE_STATE_CONNECTED,
  disconnected: MachineState.MACHINE_STATE_DISCONNECTED,
} as const;

/** QueuedInfo → berth.v1.Queued. */
export function toQueued(q: QueuedInfo | QueuedFacts): Queued {
  return {
    detail: q.detail,
    wanted: toResources(q.wanted),
    bestMachine: q.bestMachine,
    bestFree: toResources(q.bestFree),
    machinesAble: q.machinesAble,
    position: q.position,
    claimId: q.claimId,
    asked: q.asked && toResources(q.asked),
    priority: 'priority' in q ? (q.priority ?? 0) : 0,
    requeued: 'requeued' in q ? (q.requeued ?? false) : false,
  };
}

/** A preemption notice → berth.v1.Preempting (SPEC Q2). */
export function toPreempting(n: PreemptionNotice): Preempting {
  return { byClaimId: n.by, byPriority: n.byPriority, graceMs: n.graceMs, machine: n.machine, detail: n.detail };
}

/** Grant → berth.v1.Granted (without its resume token, which the Claim handler adds). */
export function toGranted(g: Grant): Granted {
  return {
    claimId: g.claimId,
    machine: g.machine,
    remote: g.remote,
    allocation: {
      cpus: g.allocation.cpus,
      gpuIds: g.allocation.gpuIds,
      ramMb: g.allocation.ramMb,
      env: g.allocation.env,
      resources: namedPlain(g.allocation.resources),
      gpuShare: shareOf(g.allocation.gpuShare),
    },
    clamped: g.clamped,
    fellBack: g.fellBack,
    asked: toResources(g.ask),
    resumeToken: '',
    resumed: false,
  };
}

/** PlacerSnapshot (+ calls in flight) → berth.v1.GetSnapshotResponse. */
export function toSnapshot(
  s: PlacerSnapshot,
  calls: GetSnapshotResponse['calls'] = [],
  running: Map<string, number> = new Map(),
): GetSnapshotResponse {
  return {
    cluster: undefined, // filled by the server when it leads a cluster (SPEC S7)
    machines: s.machines.map((m) => ({
      name: m.name,
      labels: m.labels,
      remote: m.remote,
      total: {
        cpus: m.total.cpus,
        gpuIds: m.total.gpuIds,
        ramMb: m.total.ramMb,
        resources: namedPlain(m.total.resources),
        gpuType: m.total.gpuType,
        gpuNames: m.total.gpuNames ?? [],
      },
      free: toResources(m.free),
      freeGpuIds: m.freeGpuIds,
      claims: m.claims,
      runningCalls: running.get(m.name) ?? 0,
      maxParallel: m.maxParallel,
      version: m.version,
      warmPools: undefined, // filled in by GetSnapshot from the hub
      state: m.state ? MACHINE_STATE[m.state] : MachineState.MACHINE_STATE_UNSPECIFIED,
      holdLeftMs: clampU32(m.holdLeftMs),
      gpuShares: Object.fromEntries(m.gpuShares.map(([id, units]) => [id, fromUnits(units)])),
    })),
    waiting: s.waiting.map((w) => ({
      claimId: w.claimId,
      node: w.node,
      runId: w.runId,
      label: w.label,
      reason: toQueued(w.reason),
      waitedMs: clampU32(w.waitedMs),
      priority: w.priority,
      priorityClass: w.priorityClass ?? '',
    })),
    calls,
    provisioners: s.provisioners.map((p) => ({
      name: p.name,
      status: p.status,
      kind: p.kind,
      maxMachines: p.maxMachines,
      lastError: p.lastError,
      shapes: p.shapes.map((x) => ({
        cpus: x.cpus,
        gpuIds: Array.from({ length: x.gpus }, (_, i) => i),
        ramMb: x.ramMb,
        resources: namedPlain(x.resources),
        gpuNames: [],
      })),
      shapeLabels: p.shapes.map((x) => x.labels.join(',')),
      machines: p.machines.map((m) => ({
        name: m.name,
        engineId: m.engineId,
        state: PROVISIONED_STATE[m.state],
        detail: m.detail,
        sinceMs: clampU32(m.sinceMs),
      })),
    })),
    held: s.held.map((h) => ({
      claimId: h.claimId,
      node: h.node,
      runId: h.runId,
      machine: h.machine,
      heldMs: clampU32(h.heldMs),
      priority: h.priority,
      allocation: {
        cpus: h.allocation.cpus,
        gpuIds: h.allocation.gpuIds,
        ramMb: h.allocation.ramMb,
        env: h.allocation.env,
        resources: namedPlain(h.allocation.resources),
        gpuShare: shareOf(h.allocation.gpuShare),
      },
      awaitingHolder: h.holdLeftMs !== undefined,
      holdLeftMs: clampU32(h.holdLeftMs ?? 0),
      preemptedBy: h.preemptedBy ?? '',
      preemptLeftMs: clampU32(h.preemptLeftMs ?? 0),
    })),
    pools: s.pools.map((p) => ({ name: p.name, total: fromUnits(p.total), free: fromUnits(p.free) })),
    tenants: (s.tenants ?? []).map((t) => ({
      tenant: t.tenant,
      cohort: t.cohort ?? '',
      resources: t.resources,
      weight: t.fair?.weight ?? 0,
      dominantShare: t.fair?.share ?? 0,
    })),
    groups: (s.groups ?? []).map(toGroupView),
  };
}

/** BerthEvent → berth.v1.WatchEventsResponse. */
export function toWatchEvent(e: BerthEvent): WatchEventsResponse {
  return {
    kind: e.kind,
    detail: e.detail,
    machine: e.machine ?? '',
    node: e.node ?? '',
    claimId: e.claimId ?? '',
    runId: e.runId ?? '',
    callId: e.callId ?? '',
    timeMs: String(e.timeMs),
    seq: String(e.seq),
    asked: e.asked && toResources(e.asked),
    granted: e.granted && toResources(e.granted),
    gpuIds: e.gpuIds ?? [],
    fellBack: e.fellBack ?? false,
    clamped: e.clamped ?? false,
    queued: e.queued && toQueued(e.queued),
    label: e.label ?? '',
    outcome: e.outcome ?? '',
    failureType: e.failureType ?? '',
    durationMs: clampU32(e.durationMs ?? 0),
    limiting: e.limiting ?? '',
  };
}

/**
 * Amount (or an ask: its named resources and pools, all in units of 1e-4) → berth.v1.Resources, quantities as plain
 * numbers.
 */
export function toResources(
  a: Omit<Amount, 'gpus'> & { gpus: number; resources?: Named; pools?: Named; gpuShare?: number },
): Resources {
  const named = a.res || a.resources || a.pools ? namedPlain({ ...a.res, ...a.resources, ...a.pools }) : {};
  const r: Resources = { cpus: a.cpus, gpus: a.gpus, ramMb: a.ramMb, resources: named };
  const share = a.share ?? a.gpuShare;
  if (share) r.gpuShare = fromUnits(share);
  return r;
}

/** A GPU share in units → the wire's plain fraction (SPEC P14); undefined for whole GPUs. */
function shareOf(units: number | undefined): number | undefined {
  return units ? fromUnits(units) : undefined;
}

/** Caps a duration to uint32 ms (~49 days). */
export function clampU32(ms: number): number {
  return Math.min(Math.max(0, Math.round(ms)), 0xffffffff);
}

/** A clustered server's standing → berth.v1.ClusterStatus (SPEC S7); undefined without a cluster. */
export function toClusterStatus(c: ClusterInfo | undefined): ClusterStatus | undefined {
  if (!c) return undefined;
  const { cluster: name, role, leader, epoch, leaderSinceMs, standbys } = c;
  return { name, role, leader, epoch, leaderSinceMs, standbys };
}
