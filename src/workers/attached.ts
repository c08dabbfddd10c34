/**
 * AttachedWorker: one worker stream as the hub sees it — its machine, its calls in flight, its
 * slots (SPEC W4), pending compile checks, and ordered frame writes to it.
 */
import type { CompileResult, WorkerStreamResponse } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import type { MachineSpec } from '../placement/types.js';
import type { CallRecord } from './call-record.js';
import { Slots } from './slots.js';

/** Writes one frame to the worker; resolves when handed to the transport. */
export type FrameSink = (frame: WorkerStreamResponse['frame']) => Promise<void>;

/** A worker attached over one stream. */
export class AttachedWorker {
  readonly calls = new Map<string, CallRecord>();
  readonly compiles = new Map<string, (r: CompileResult | BerthError) => void>();
  readonly slots: Slots;
  /** Aborted (with the reason) when this stream is no longer the worker's: ended, replaced, silent. */
  readonly gone = new AbortController();
  lastSeen = Date.now();
  #chain: Promise<void> = Promise.resolve();

  constructor(readonly spec: MachineSpec, readonly sink: FrameSink) {
    this.slots = new Slots(spec.maxParallel ?? 0);
  }

  /** Name of the machine. */
  get name(): string {
    return this.spec.name;
  }

  /** Queues a frame in order; a failed write (stream gone) is ignored: `gone` says it. */
  send(frame: WorkerStreamResponse['frame']): Promise<void> {
    this.#chain = this.#chain.then(() => this.sink(frame)).catch(() => undefined);
    return this.#chain;
  }

  /**
   * This stream is over: every call in flight fails at once with `reason` (SPEC W3), pending
   * compiles get it too. Idempotent.
   */
  leave(reason: BerthError): void {
    if (this.gone.signal.aborted) return;
    this.gone.abort(reason);
    for (const c of this.calls.values()) {
      c.fail(reason);
      c.markSettled();
    }
    this.calls.clear();
    for (const done of this.compiles.values()) done(reason);
    this.compiles.clear();
  }
}
