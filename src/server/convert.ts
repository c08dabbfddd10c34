/**
 * Domain shapes → berth.v1 messages. Only the edge knows the wire types' field names.
 */
import type { GetSnapshotResponse, Granted, Queued, WatchEventsResponse } from '../../generated/ts/berth/v1/placement.js';
import type { BerthEvent } from '../events.js';
import type { PlacerSnapshot } from '../placement/snapshot.js';
import type { Grant, QueuedInfo } from '../placement/types.js';

/** QueuedInfo → berth.v1.Queued. */
export function toQueued(q: QueuedInfo): Queued {
  return {
    detail: q.detail,
    wanted: { cpus: q.wanted.cpus, gpus: q.wanted.gpus, ramMb: q.wanted.ramMb },
    bestMachine: q.bestMachine,
    bestFree: { cpus: q.bestFree.cpus, gpus: q.bestFree.gpus, ramMb: q.bestFree.ramMb },
    machinesAble: q.machinesAble,
    position: q.position,
    claimId: q.claimId,
    asked: q.asked ? { cpus: q.asked.cpus, gpus: q.asked.gpus, ramMb: q.asked.ramMb } : undefined,
  };
}

/** Grant → berth.v1.Granted. */
export function toGranted(g: Grant): Granted {
  return {
    claimId: g.claimId,
    machine: g.machine,
    remote: g.remote,
    allocation: { cpus: g.allocation.cpus, gpuIds: g.allocation.gpuIds, ramMb: g.allocation.ramMb, env: g.allocation.env },
    clamped: g.clamped,
    fellBack: g.fellBack,
    asked: { cpus: g.ask.cpus, gpus: g.ask.gpus, ramMb: g.ask.ramMb },
  };
}

/** PlacerSnapshot (+ calls in flight) → berth.v1.GetSnapshotResponse. */
export function toSnapshot(s: PlacerSnapshot, calls: GetSnapshotResponse['calls'] = [], running: Map<string, number> = new Map()): GetSnapshotResponse {
  return {
    machines: s.machines.map((m) => ({
      name: m.name, labels: m.labels, remote: m.remote,
      total: { cpus: m.total.cpus, gpuIds: m.total.gpuIds, ramMb: m.total.ramMb },
      free: { cpus: m.free.cpus, gpus: m.free.gpus, ramMb: m.free.ramMb },
      freeGpuIds: m.freeGpuIds, claims: m.claims, runningCalls: running.get(m.name) ?? 0, maxParallel: m.maxParallel, version: m.version,
    })),
    waiting: s.waiting.map((w) => ({
      claimId: w.claimId, node: w.node, runId: w.runId, label: w.label, reason: toQueued(w.reason), waitedMs: clampU32(w.waitedMs),
    })),
    calls,
    provisioners: s.provisioners.map((p) => ({
      name: p.name, status: p.status, shapes: p.shapes.map((x) => ({ cpus: x.cpus, gpuIds: x.gpuIds, ramMb: x.ramMb })),
    })),
    held: s.held.map((h) => ({
      claimId: h.claimId, node: h.node, runId: h.runId, machine: h.machine, heldMs: clampU32(h.heldMs),
      allocation: { cpus: h.allocation.cpus, gpuIds: h.allocation.gpuIds, ramMb: h.allocation.ramMb, env: h.allocation.env },
    })),
  };
}

/** BerthEvent → berth.v1.WatchEventsResponse. */
export function toWatchEvent(e: BerthEvent): WatchEventsResponse {
  return {
    kind: e.kind, detail: e.detail, machine: e.machine ?? '', node: e.node ?? '', claimId: e.claimId ?? '',
    runId: e.runId ?? '', callId: e.callId ?? '', timeMs: String(e.timeMs), seq: String(e.seq),
    asked: undefined, granted: undefined, gpuIds: [], fellBack: false, clamped: false, queued: undefined, label: '',
    outcome: '', failureType: '', durationMs: 0, limiting: '',
  };
}

/** Caps a duration to uint32 ms (~49 days). */
export function clampU32(ms: number): number {
  return Math.min(Math.max(0, Math.round(ms)), 0xffffffff);
}
