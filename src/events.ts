/**
 * EventBus: the in-process stream of placement and worker events behind `WatchEvents`
 * (node_queued, node_placed, node_clamped, claim_released, worker_attached, worker_detached,
 * call_started, call_finished, …). Synchronous fan-out; a throwing listener is isolated.
 * Events carry their facts as typed fields (issue 13) beside the prose `detail`; WatchEvents, the
 * decision log, the metrics and the status page all read the same event.
 */
import type { Amount } from './resources/books.js';

/** Event kinds berth emits. */
export type EventKind =
  | 'node_queued'
  | 'node_placed'
  | 'node_clamped'
  | 'node_abandoned'
  | 'claim_released'
  | 'claim_lost'
  | 'claim_awaiting_holder' // a claim's stream broke without Release; it awaits its holder for its hold (SPEC S3)
  | 'claim_resumed' // its holder took the awaiting claim back with its resume token (SPEC S3)
  | 'claim_preempted' // a held claim was told to make room for a higher-priority claim, with a grace (SPEC Q2)
  | 'worker_attached'
  | 'worker_detached'
  | 'worker_replaced'
  | 'worker_disconnected' // a worker's stream broke: held, nothing new placed on it (SPEC S2)
  | 'worker_reconnected' // it came back within its hold
  | 'worker_hold_expired' // its hold ran out: it leaves, its calls failed "went away"
  | 'call_started'
  | 'call_finished'
  | 'call_cancelled'
  | 'call_retrying' // an attempt of a call ended with its machine lost (or its failure): placed again (SPEC S8)
  | 'server_draining'
  | 'server_stopping'
  | 'machine_started' // a provisioner started a machine (SPEC V2)
  | 'machine_start_failed' // a start failed or never attached: the engine's message (SPEC V4)
  | 'machine_stopping' // an idle or unneeded machine is given back (SPEC V3)
  | 'machine_lost' // reconcile found a started machine gone outside berth (SPEC V3)
  | 'group_queued' // a group waits (rule G4); claim_id is the group id
  | 'group_placed' // every member of a group was granted in one step (rule G1); detail names where each went
  | 'group_released' // every member was given back in one step
  | 'group_lost' // a member's machine went away: the whole group was released (rule G1)
  | 'group_abandoned' // a waiting group's stream ended
  | 'group_awaiting_holder' // a group restored after a restart awaits its holder for the claim hold (rule G7)
  | 'group_resumed' // its holder took the restored group back with its resume token (rule G7)
  | 'watch_started';

/** Why a claim waits, as berth.v1.Queued carries it (SPEC P6); amounts in cores / count / MB. */
export interface QueuedFacts {
  claimId: string;
  detail: string;
  wanted: Amount;
  bestMachine: string;
  bestFree: Amount;
  machinesAble: number;
  position: number;
  asked?: Amount;
  /** Set when a preempted claim waits again at its place (SPEC Q2 requeue). */
  requeued?: boolean;
}

/** The typed facts an event may carry (issue 13); absent when they do not apply to its kind. */
export interface EventFacts {
  /** Amount asked, before clamping (node_queued, node_placed, node_clamped). */
  asked?: Amount;
  /** Amount granted or given back (node_placed, node_clamped, claim_released, claim_lost, call_started). */
  granted?: Amount;
  /** Exact device ids granted or given back. */
  gpuIds?: number[];
  /** A preferred label could not be honoured (SPEC P4). */
  fellBack?: boolean;
  /** The ask was cut down to the best real machine (SPEC P5). */
  clamped?: boolean;
  /** Why the claim waits (node_queued). */
  queued?: QueuedFacts;
  /** Label of the ask or the worker's labels joined by commas. */
  label?: string;
  /**
   * How it ended: claim_released "released" | "half_closed" | "stream_ended" | "run_ended" | "abandoned" |
   * "server_draining" | "hold_ran_out" | "preempted"; claim_lost "lost"; call_finished "result" | "failure" | "error".
   */
  outcome?: string;
  /** Class name of a call's failure (call_finished, outcome "failure"). */
  failureType?: string;
  /**
   * ms: node_placed time waited, claim_released time held, call_finished time running; worker_disconnected the
   * hold, worker_reconnected and worker_hold_expired the time disconnected; claim_awaiting_holder the hold,
   * claim_resumed time awaited.
   */
  durationMs?: number;
  /** node_clamped: the first dimension no machine can hold ("cpus", "gpus" or "ram_mb"). */
  limiting?: string;
  /** call_started: its claim was placed by its Run and ends with the call (no history entry of its own, SPEC S9). */
  runClaim?: boolean;
  /**
   * call_started: how long the call outlives its caller's broken stream, waiting to be followed again (the Run's
   * disconnect_grace_ms, SPEC S3), in ms; absent for none. Journaled, so a call re-bound after a restart keeps it.
   */
  callerGraceMs?: number;
  /** claim_preempted: the id of the claim it makes room for (SPEC Q2). */
  preemptor?: string;
  /** claim_preempted: true when the preemptor's tenant takes back what its cohort lent (SPEC Q3), not by priority. */
  reclaim?: boolean;
}

/** One event. `seq` increases by one per event; `timeMs` is ms since the Unix epoch. */
export interface BerthEvent extends EventFacts {
  kind: EventKind;
  detail: string;
  machine?: string;
  node?: string;
  claimId?: string;
  runId?: string;
  callId?: string;
  seq: number;
  timeMs: number;
}

/** What a producer passes to `emit` (seq and time are stamped by the bus). */
export type EventInput = Omit<BerthEvent, 'seq' | 'timeMs'>;

/** Fan-out of events to subscribers, in emission order. */
export class EventBus {
  #seq = 0;
  readonly #subs = new Set<(e: BerthEvent) => void>();

  /**
   * Stamps `e` (in place: producers pass a fresh object, which becomes the event) and delivers it
   * to every subscriber synchronously; returns the stamped event.
   */
  emit(e: EventInput): BerthEvent {
    const ev = e as BerthEvent;
    ev.seq = ++this.#seq;
    ev.timeMs = Date.now();
    for (const fn of this.#subs) {
      try {
        fn(ev);
      } catch {
        // a subscriber's failure must not break placement
      }
    }
    return ev;
  }

  /** Subscribes `fn`; returns the unsubscribe function. */
  subscribe(fn: (e: BerthEvent) => void): () => void {
    this.#subs.add(fn);
    return () => this.#subs.delete(fn);
  }

  /** Sequence number of the last event emitted (0 before any). */
  get seq(): number {
    return this.#seq;
  }

  /** Number of subscribers (for tests and status). */
  get size(): number {
    return this.#subs.size;
  }
}
