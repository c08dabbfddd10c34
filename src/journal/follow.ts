/**
 * Feeds the journal from the event bus (issue 19 item 4): every grant, release and loss of a claim or a group,
 * every worker attached or gone, every call started and ended becomes a queued journal change, made
 * synchronously when the event is emitted. The placer never waits for the journal; the handlers
 * that acknowledge await `journal.flushed()` before they answer (SPEC S4).
 */
import type { BerthEvent, EventBus } from '../events.js';
import type { Placer } from '../placement/placer.js';
import type { AllocationGrant } from '../placement/types.js';
import { keptEnding } from './ending.js';
import { historyEntries, type HistoryEntry } from './history.js';
import type { Journal } from './journal.js';

/**
 * Subscribes `journal` to `events`; returns the unsubscribe function. `agentOf(name)`: the agent id
 * (`<host>:<state dir>`, SPEC S5) of the worker attached under `name`, '' when it sent none; `endOf(callId)`: the
 * owner and ending of call `callId` (kept in its ended record, src/journal/ending.ts), undefined when unknown.
 */
export function followEvents(
  journal: Journal,
  events: EventBus,
  placer: Placer,
  agentOf: (name: string) => string = () => '',
  instanceOf: (name: string) => string = () => '',
  endOf: (callId: string) => Parameters<typeof keptEnding>[0] | undefined = () => undefined,
): () => void {
  const entryOf = historyEntries();
  return events.subscribe((e: BerthEvent) => {
    const h = entryOf(e); // the history (SPEC S9): how a call or claim ended
    switch (e.kind) {
      case 'node_placed': {
        const g = e.claimId === undefined ? undefined : placer.get(e.claimId);
        if (!g || journal.holds(g.claimId)) return; // a restored claim is journaled already
        journal.claimHeld({
          claimId: g.claimId,
          machine: g.machine,
          remote: g.remote,
          allocation: allocationRecord(g.allocation),
          clamped: g.clamped,
          fellBack: g.fellBack,
          ask: g.ask,
          tokenHash: '',
          holdMs: 0,
          at: e.timeMs,
        });
        return;
      }
      case 'group_placed': {
        const g = e.claimId === undefined ? undefined : placer.heldGroup(e.claimId);
        if (!g || journal.holdsGroup(g.groupId)) return; // a restored group is journaled already
        const members = g.members.map((m) => ({
          claimId: m.claimId,
          machine: m.machine,
          remote: m.remote,
          allocation: allocationRecord(m.allocation),
          ask: m.ask,
        }));
        journal.groupHeld({ groupId: g.groupId, strategy: g.strategy, members, tokenHash: '', at: e.timeMs });
        return;
      }
      case 'group_released':
      case 'group_lost':
        if (e.claimId !== undefined) journal.groupGone(e.claimId);
        return;
      case 'claim_released':
      case 'claim_lost': {
        if (e.claimId === undefined) return;
        journal.claimGone(e.claimId, h && { claimId: h.id, ...facts(h), outcome: h.outcome });
        return;
      }
      case 'worker_attached':
      case 'worker_reconnected': {
        const m = e.machine === undefined ? undefined : placer.machines.get(e.machine)?.spec;
        if (!m) return;
        journal.workerKnown({
          name: m.name,
          labels: m.labels,
          inventory: { cpus: m.inventory.cpus, gpuIds: m.inventory.gpuIds, ramMb: m.inventory.ramMb },
          maxParallel: m.maxParallel ?? 0,
          version: m.version ?? '',
          agentId: agentOf(m.name),
          instanceId: instanceOf(m.name),
          at: e.timeMs,
        });
        return;
      }
      case 'worker_detached':
        if (e.machine !== undefined) journal.workerGone(e.machine);
        return;
      case 'call_started':
        if (e.callId !== undefined)
          journal.callStarted({
            callId: e.callId,
            claimId: e.claimId ?? '',
            machine: e.machine ?? '',
            runId: e.runId ?? '',
            at: e.timeMs,
            ...(e.callerGraceMs ? { callerGraceMs: e.callerGraceMs } : {}),
          });
        return;
      case 'call_finished':
      case 'call_cancelled': {
        if (h)
          journal.callEnded({
            callId: h.id,
            ...facts(h),
            outcome: e.outcome ?? 'result',
            failureType: e.failureType,
            attempt: h.attempt,
            ...keptEnding(endOf(h.id) ?? {}),
          });
        return;
      }
    }
  });
}

/** What a claim's record keeps of allocation `a`: exactly what it holds. */
function allocationRecord(a: AllocationGrant) {
  return {
    cpus: a.cpus,
    gpuIds: a.gpuIds,
    ramMb: a.ramMb,
    env: a.env,
    ...(a.resources ? { resources: a.resources } : {}),
    ...(a.gpuShare ? { gpuShare: a.gpuShare } : {}),
  };
}

/** The facts of history entry `h` every ended record keeps (SPEC S9). */
function facts(h: HistoryEntry) {
  const { runId, machine, node, state, detail, startedAt, endedAt } = h;
  return { runId, machine, node, state, detail, startedAt, endedAt };
}
