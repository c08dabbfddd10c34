/**
 * The one interface of the executors the agent and the server share (SPEC W6): a task, an event
 * callback and an AbortSignal in; an outcome out. Units: ms.
 */

/** A subprocess payload: argv with `{devices}` placeholders, extra env, working directory ('' = own). */
export interface CommandPayload {
  kind: 'command';
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

/** A Python payload: source defining process(**kwargs), and the JSON-like kwargs. */
export interface SourcePayload {
  kind: 'source';
  source: string;
  kwargs: Record<string, unknown>;
}

/** One execution: what runs, with the allocation's device ids and env (SPEC P9). */
export interface Task {
  /** Call id `<run_id>:<flow>.<node>`; names the source file in tracebacks. */
  callId: string;
  payload: CommandPayload | SourcePayload;
  gpuIds: number[];
  /** OMP_NUM_THREADS, CUDA_VISIBLE_DEVICES and the ask's env, applied over the process env. */
  env: Record<string, string>;
}

/** Something a running task reports, in order (SPEC W2). */
export type ExecEvent =
  | { kind: 'metric'; name: string; value: number }
  | { kind: 'log'; stream: 'stdout' | 'stderr'; line: string };

/** A task's failure: the node's exception class, message and traceback; `ExitCode` for commands. */
export interface ExecFailure {
  type: string;
  message: string;
  traceback: string;
}

/** How a task ended when it was not cancelled. */
export type Outcome = { ok: true; value: unknown } | ({ ok: false } & ExecFailure);

/**
 * Backpressure from whoever consumes the events: while `full()`, an executor stops reading the
 * process's output (the process blocks on its pipe) until `room()` resolves. Nothing is dropped.
 */
export interface Flow {
  full(): boolean;
  room(): Promise<void>;
}

/**
 * Runs tasks. `run` resolves with the outcome once the process is done with it; when `signal`
 * aborts, the process group gets SIGTERM, then SIGKILL after the grace, and `run` rejects with
 * `signal.reason` only after the process has exited (so its resources are really free).
 */
export interface Executor {
  run(task: Task, onEvent: (e: ExecEvent) => void, signal: AbortSignal, flow?: Flow): Promise<Outcome>;
}
