/**
 * EventBus: the in-process stream of placement and worker events behind `WatchEvents`
 * (node_queued, node_placed, node_clamped, claim_released, worker_attached, worker_detached,
 * call_started, call_finished, …). Synchronous fan-out; a throwing listener is isolated.
 */

/** Event kinds berth emits. */
export type EventKind =
  | 'node_queued'
  | 'node_placed'
  | 'node_clamped'
  | 'node_abandoned'
  | 'claim_released'
  | 'claim_lost'
  | 'worker_attached'
  | 'worker_detached'
  | 'worker_replaced'
  | 'call_started'
  | 'call_finished'
  | 'call_cancelled'
  | 'server_draining'
  | 'machine_started' // a provisioner started a machine (SPEC V2)
  | 'machine_start_failed' // a start failed or never attached: the engine's message (SPEC V4)
  | 'machine_stopping' // an idle or unneeded machine is given back (SPEC V3)
  | 'machine_lost' // reconcile found a started machine gone outside berth (SPEC V3)
  | 'watch_started';

/** One event. `seq` increases by one per event; `timeMs` is ms since the Unix epoch. */
export interface BerthEvent {
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

  /** Stamps and delivers `e` to every subscriber synchronously; returns the stamped event. */
  emit(e: EventInput): BerthEvent {
    const ev: BerthEvent = { ...e, seq: ++this.#seq, timeMs: Date.now() };
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
