/**
 * Shapes shared by every part of `berth dispatch` (SPEC D1–D8): a validated job, the one result
 * each job gets, and the runner interface behind which embedded and `--server` runs look alike.
 * Units: devices are counts or sorted ids; times in ms.
 */
import type { OutputCapture } from './capture.js';

/** One job of a batch after validation (SPEC D1). Exactly one of `argv` and `shell` is set. */
export interface Job {
  /** 0-based position in the batch file. */
  index: number;
  /** The job's name (batch key `name:`, formerly `label:`): log files, JUnit testcases, output lines. */
  name: string;
  /**
   * A machine label the job must run on (`require:`) or would rather run on (`prefer:`), passed as
   * the Run's ask (label, policy) with `--server`. Undefined for a job with neither.
   */
  machine?: { label: string; policy: 'require' | 'prefer' };
  /**
   * Number of devices the job needs (≥ 0), or a share of one device in (0, 1) in steps of 0.0001
   * (`0.5`: two such jobs share one device; sharing is not isolation).
   */
  devices: number;
  /** Named resources and pools the job takes with `--server` (`{trainer: 1}`, plain numbers); none when absent. */
  resources?: Record<string, number>;
  argv?: string[];
  /** A line run by `sh -c`. */
  shell?: string;
  cwd?: string;
  env: Record<string, string>;
  /** Per-job timeout in ms (undefined = none). */
  timeoutMs?: number;
  /** Send SIGUSR1 to the job before stopping it on a timeout (for a stack dump). */
  stackDumpSignal: boolean;
  /**
   * `retries:` (0 to 10): with `--server`, how many times the job is placed again when its machine is lost (SPEC
   * S8); never for its own failure. Embedded runs ignore it (the local machine is never lost).
   */
  retries?: number;
}

/** How a job ended. */
/**
 * How a job ended. `spawn_error`: its program could not be started (missing program, bad cwd);
 * `error`: it could not run, or be followed to its end, for a reason outside the job (berth
 * refused it, fewer devices granted than asked, its machine went away, no log file).
 */
export type JobStatus = 'passed' | 'failed' | 'timed_out' | 'cancelled' | 'skipped' | 'spawn_error' | 'error';

/** Every status, in the order summaries list them. */
export const JOB_STATUSES: readonly JobStatus[] = [
  'passed',
  'failed',
  'timed_out',
  'cancelled',
  'skipped',
  'spawn_error',
  'error',
];

/** The one result of one job. `durationMs` is 0 for jobs that never started. */
export interface JobResult {
  index: number;
  /** The job's name. */
  name: string;
  status: JobStatus;
  exitCode: number | null;
  signal: string | null;
  /** Device ids the job held (sorted); [] when it held none or never started. */
  devices: number[];
  /** Machine that ran it (`--server` mode). */
  machine?: string;
  pid?: number;
  durationMs: number;
  /** Per-job log file with the whole combined output; undefined for jobs that printed nothing (or never started). */
  logFile?: string;
  /** Why the job could not start, or what went wrong around it. */
  error?: string;
  /** Recent output, invalid UTF-8 replaced: the ring's worth for jobs that did not pass, 4 KiB for those that did. */
  tail: string;
}

/** Where a job landed, known once it started. */
export interface StartInfo {
  /** The job's process id when the runner knows it (local jobs; a berth worker does not report one). */
  pid?: number;
  machine?: string;
  devices: number[];
}

/** How a started job ended: an exit code or a signal, or an error that kept it from running. */
export interface RunEnd {
  exitCode: number | null;
  signal: string | null;
  /** Set when the job's program could not be started (no such program, bad cwd): status spawn_error. */
  spawnError?: string;
  /**
   * Set when the job could not run or be followed to its end for a reason outside it (berth refused
   * it, a grant with fewer devices than asked, its machine went away): status error.
   */
  error?: string;
}

/** A job in flight. */
export interface JobRun {
  /** Resolves once the job ended and its output is fully captured; never rejects. */
  readonly done: Promise<RunEnd>;
  /** Stops the job: SIGTERM to its process group, SIGKILL after `graceMs` (or the remote equivalent). */
  stop(graceMs: number): void;
  /** Asks the job for a stack dump (SIGUSR1) when the runner can; returns false when it cannot. */
  dumpStack(): boolean;
}

/** Starts jobs: on this host (embedded) or through a berth server. */
export interface Runner {
  /**
   * Starts `job` on `ids` (sorted device ids; [] in `--server` mode, where berth picks them), writing
   * its output to `capture` and calling `onStarted` once it runs. Never throws: a job that cannot
   * start resolves `done` with `spawnError`.
   */
  start(job: Job, ids: number[], capture: OutputCapture, onStarted: (info: StartInfo) => void): JobRun;
  /** Resolves once the runner can start jobs; rejects with a message fit for the user (e.g. server unreachable). */
  ready(): Promise<void>;
  /** Releases what the runner holds (channels). */
  close(): void;
}
