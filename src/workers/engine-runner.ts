/**
 * EngineRunner: runs calls placed on the engine host in-process with the same executors the
 * agent uses, so a lone `berth serve` can run work. Executors start on first use.
 */
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { CallSpec } from './attached.js';
import { CallRecord } from './call-record.js';
import { Executors } from './executors/index.js';
import { toEvent, toTask, toTerminal } from './task.js';

/** The engine host's executor. `graceMs`: SIGTERM → SIGKILL delay on cancel. */
export class EngineRunner {
  #executors?: Executors;

  constructor(readonly machine: string, readonly graceMs: number) {}

  /**
   * Starts `spec` with `allocation`; the record settles when the process is done.
   * @throws BerthError invalid_argument for a bad payload.
   */
  start(spec: CallSpec, allocation: Allocation): CallRecord {
    const task = toTask(spec.callId, allocation, spec.payload);
    this.#executors ??= new Executors({ graceMs: this.graceMs });
    const ac = new AbortController();
    const rec = new CallRecord(spec.callId, spec.runId, this.machine, allocation, (reason) => ac.abort(reason));
    void this.#executors
      .run(task, (e) => rec.event(toEvent(spec.callId, e)), ac.signal)
      .then(
        (o) => rec.finish(toTerminal(spec.callId, o)),
        (err: unknown) => rec.fail(err instanceof BerthError ? err : new BerthError('unavailable', `engine executor failed: ${String(err)}`)),
      )
      .finally(() => rec.markSettled());
    return rec;
  }

  /** Closes warm Python processes. */
  async close(): Promise<void> {
    await this.#executors?.close();
  }
}
