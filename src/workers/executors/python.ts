/**
 * PythonExecutor: runs `source` payloads in warm harness processes (SPEC W6). The source is
 * defined, `process(**kwargs)` called and its JSON-able value returned; `report(name, value)`
 * becomes a metric event; print output becomes log events; an exception becomes a Failure with
 * its class name, message and a traceback naming the source line. Env = process env + allocation env.
 */
import { DEFAULT_GRACE_MS, type GroupSet } from './kill.js';
import { DEFAULT_IDLE_MS, type PoolLimits, PythonPools } from './pools.js';
import type { ExecEvent, ExecFailure, Executor, Flow, Outcome, SourcePayload, Task } from './types.js';

/**
 * Options: `graceMs` SIGTERM → SIGKILL delay; `python` interpreter; `onPoolsChanged(count)`;
 * `groups` where the Python processes' groups are tracked; `pool` bounds of the warm pools (`cap`:
 * the machine's cores, what its allocations allow at once; `idleMs` default BERTH_POOL_IDLE_MS or 60 s).
 */
export interface PythonExecutorOptions {
  graceMs?: number;
  python?: string;
  onPoolsChanged?: (count: number) => void;
  groups?: GroupSet;
  pool?: Partial<PoolLimits>;
}

/**
 * The idle timeout of warm processes from BERTH_POOL_IDLE_MS (whole ms ≥ 1), or DEFAULT_IDLE_MS.
 * @throws Error naming the variable and the value when it is not a whole number ≥ 1.
 */
export function poolIdleMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.BERTH_POOL_IDLE_MS;
  if (raw === undefined || raw === '') return DEFAULT_IDLE_MS;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new Error(`BERTH_POOL_IDLE_MS: must be a whole number of ms, at least 1 (got ${JSON.stringify(raw)})`);
  return Number(raw);
}

/** Runs Python payloads and compile checks. */
export class PythonExecutor implements Executor {
  readonly pools: PythonPools;
  readonly #graceMs: number;

  constructor(o: PythonExecutorOptions = {}) {
    this.#graceMs = o.graceMs ?? DEFAULT_GRACE_MS;
    this.pools = new PythonPools(
      o.python ?? process.env.BERTH_PYTHON ?? 'python3',
      { idleMs: poolIdleMs(), ...o.pool },
      o.onPoolsChanged,
      o.groups,
    );
  }

  /** See Executor.run. On cancel the process is stopped and replaced, never reused. */
  async run(task: Task, onEvent: (e: ExecEvent) => void, signal: AbortSignal, flow?: Flow): Promise<Outcome> {
    const p = task.payload as SourcePayload;
    if (p.kind !== 'source') throw new TypeError('PythonExecutor runs source payloads only');
    signal.throwIfAborted();
    const lease = this.pools.acquire(task.env); // keyed by the node's own env: no copy of process.env per call
    const proc = lease.proc;
    let stopping: Promise<void> | undefined;
    const onAbort = () => {
      stopping = proc.stop(this.#graceMs);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    let reusable = false;
    try {
      const answer = await proc.request(
        { op: 'run', source: p.source, kwargs: p.kwargs, filename: `<${task.callId}>` },
        onEvent,
        flow,
      );
      if (stopping) {
        await stopping;
        throw signal.reason;
      }
      if (answer.t === 'result') {
        reusable = true;
        return { ok: true, value: answer.value };
      }
      if (answer.t === 'failure') {
        reusable = answer.type !== 'WorkerProcessDied';
        return { ok: false, type: answer.type, message: answer.message, traceback: answer.traceback };
      }
      return { ok: false, type: 'ProtocolError', message: `unexpected harness answer ${answer.t}`, traceback: '' };
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.pools.release(lease, reusable && !signal.aborted);
    }
  }

  /**
   * Compiles `source` without running it (SPEC W5): undefined when it compiles, else the
   * SyntaxError as a failure. Uses a process of the executor's own env.
   */
  async compile(source: string, filename: string): Promise<ExecFailure | undefined> {
    const lease = this.pools.acquire({});
    let reusable = false;
    try {
      const a = await lease.proc.request({ op: 'compile', source, filename }, () => undefined);
      reusable = a.t === 'compiled' || (a.t === 'failure' && a.type !== 'WorkerProcessDied');
      if (a.t === 'compiled') return undefined;
      if (a.t === 'failure') return { type: a.type, message: a.message, traceback: a.traceback };
      return { type: 'ProtocolError', message: 'unexpected harness answer', traceback: '' };
    } finally {
      this.pools.release(lease, reusable);
    }
  }

  /** Closes every warm process. */
  close(): Promise<void> {
    return this.pools.closeAll();
  }
}
