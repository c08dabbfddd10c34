/**
 * EngineRunner: runs calls placed on the engine host in-process with the same executors the
 * agent uses, so a lone `berth serve` can run work. Executors start on first use. On shutdown
 * (`close`) calls still running are stopped — SIGTERM, SIGKILL after the grace — and close
 * resolves only once their process groups are gone, so nothing outlives the server.
 */
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { CallSpec } from './attached.js';
import { CallRecord } from './call-record.js';
import { Executors } from './executors/index.js';
import { GROUP_GONE_MS } from './executors/kill.js';
import { poolCap } from './executors/pools.js';
import type { WarmPools } from '../../generated/ts/berth/v1/calls.js';
import { EventBatcher } from './event-batcher.js';
import { toTask, toTerminal } from './task.js';

/** The engine host's executor. `graceMs`: SIGTERM → SIGKILL delay on cancel and on shutdown. */
export class EngineRunner {
  #executors?: Executors;
  readonly #live = new Set<CallRecord>();
  #closing = false;

  /** @param cpus the engine's cores: the cap of its warm Python processes (poolCap). */
  constructor(
    readonly machine: string,
    readonly graceMs: number,
    readonly cpus = 64,
  ) {}

  /** The engine's warm Python pools (zeros before the first Python call). */
  warmPools(): WarmPools {
    return (
      this.#executors?.python.pools.stats() ?? {
        pools: 0,
        idle: 0,
        busy: 0,
        hits: 0,
        misses: 0,
        prestarted: 0,
        retired: 0,
        cap: poolCap(this.cpus),
      }
    );
  }

  /**
   * Starts `spec` with `allocation`; the record settles when the process is done.
   * @throws BerthError invalid_argument for a bad payload; unavailable once the server is stopping.
   */
  start(spec: CallSpec, allocation: Allocation): CallRecord {
    const task = toTask(spec.callId, allocation, spec.payload);
    if (this.#closing)
      throw new BerthError('unavailable', `server is stopping: ${spec.callId} not started on ${this.machine}`);
    this.#executors ??= new Executors({ graceMs: this.graceMs, pool: { cap: poolCap(this.cpus) } });
    const ac = new AbortController();
    const rec = new CallRecord(spec.callId, spec.runId, this.machine, allocation, (reason) => ac.abort(reason));
    this.#live.add(rec);
    const batch = new EventBatcher(spec.callId, (ev) => rec.event(ev)); // output lines batched, in order
    void this.#executors
      .run(task, (e) => batch.push(e), ac.signal, rec) // rec is the Flow: output pauses while callers lag
      .then(
        (o) => {
          batch.close();
          rec.finish(toTerminal(spec.callId, o));
        },
        (err: unknown) => {
          batch.close();
          rec.fail(
            err instanceof BerthError ? err : new BerthError('unavailable', `engine executor failed: ${String(err)}`),
          );
        },
      )
      .finally(() => {
        this.#live.delete(rec);
        rec.markSettled();
      });
    return rec;
  }

  /**
   * Shutdown: refuses new calls, stops every call still running (SIGTERM to its process group,
   * SIGKILL after `graceMs`), waits for them — at most `graceMs` + GROUP_GONE_MS + 1 s, then
   * SIGKILLs whatever is left — and closes warm Python processes. Resolves once the groups are gone.
   */
  async close(): Promise<void> {
    this.#closing = true;
    const live = [...this.#live];
    const reason = new BerthError('unavailable', `server stopped: call stopped on ${this.machine}`);
    for (const rec of live) {
      rec.stop(reason);
      rec.fail(reason);
    }
    const ex = this.#executors;
    if (!ex) return;
    if (live.length) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.graceMs + GROUP_GONE_MS + 1000)));
      await Promise.race([Promise.all(live.map((r) => r.settled)), bound]);
      clearTimeout(timer);
      ex.killAll();
      await ex.groups.allGone();
    }
    await ex.close();
  }

  /** SIGKILLs every process group of the engine host's calls now (synchronous: second signal). */
  killNow(): void {
    this.#closing = true;
    this.#executors?.killAll();
  }
}
