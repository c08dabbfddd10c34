/**
 * runBatch: runs a validated batch to the end and returns exactly one result per job, in file
 * order (SPEC D3–D7). Jobs are admitted by the Scheduler the moment devices free (no polling);
 * a per-job timeout stops that job alone, the batch timeout, fail-fast and `signal` stop the
 * queue (the rest `skipped`) and every running job (SIGTERM, SIGKILL after the grace). A `--server`
 * job whose Run still waits in berth's queue has not started: stopped, it is `skipped` too (no
 * SIGTERM, no log file), as a queued job is locally.
 */
import { join } from 'node:path';
import type { DevicePool } from '../resources/devices.js';
import { OutputCapture } from './capture.js';
import type { Job, JobResult, JobRun, JobStatus, RunEnd, Runner, StartInfo } from './job.js';
import type { Reporter } from './reporter.js';
import { Scheduler } from './scheduler.js';

/** How one batch runs. Times in ms. */
export interface BatchConfig {
  /** Devices to hand out; null when a server places jobs. */
  pool: DevicePool | null;
  maxInFlight: number;
  /** Overtakes allowed per blocked head; 0 = strict FIFO. */
  backfill: number;
  failFast: boolean;
  /** SIGTERM → SIGKILL delay. */
  graceMs: number;
  /** Whole-batch timeout; undefined = none. */
  batchTimeoutMs?: number;
  /** Directory receiving one log file per started job. */
  logDir: string;
  /** Bytes of recent output kept in memory per job. */
  ringBytes?: number;
  /** Wait after SIGUSR1 before stopping a timed-out job that asked for a stack dump. */
  stackDumpWaitMs?: number;
}

/** Characters of recent output a passed job's result keeps (results of big batches stay small). */
export const PASSED_TAIL_CHARS = 4096;

interface Running {
  run: JobRun;
  capture: OutputCapture;
  info: StartInfo;
  startedMs: number;
  /** The runner said it runs (a process, or berth's Started); a stopped job that never did is skipped. */
  started: boolean;
  timer?: NodeJS.Timeout;
  /** Why dispatch stopped it; decides the status. */
  stopped?: 'cancelled' | 'timed_out';
  /** Its timeout passed (it may end on the stack-dump signal before it is stopped). */
  expired?: boolean;
}

function fileName(job: Job): string {
  return `${String(job.index + 1).padStart(3, '0')}-${job.name.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, 60)}.log`;
}

function statusOf(end: RunEnd, r: Running): JobStatus {
  if (r.stopped !== undefined) return r.started ? r.stopped : 'skipped'; // a --server job stopped while it waited
  if (end.spawnError !== undefined) return 'spawn_error';
  if (end.error !== undefined) return 'error';
  if (r.expired) return 'timed_out';
  return end.exitCode === 0 ? 'passed' : 'failed';
}

/**
 * Runs `jobs` with `runner`, telling `reporter` as things happen. Aborting `signal` (Ctrl-C,
 * SIGTERM) stops the batch like fail-fast, with running jobs reported `cancelled`.
 * Resolves once every job has ended; never rejects for a job's sake.
 */
export function runBatch(
  jobs: readonly Job[],
  runner: Runner,
  config: BatchConfig,
  reporter: Reporter,
  signal?: AbortSignal,
): Promise<JobResult[]> {
  const scheduler = new Scheduler(
    jobs.map((j) => j.devices),
    config.pool,
    { maxInFlight: config.maxInFlight, backfill: config.backfill },
  );
  const results: (JobResult | undefined)[] = jobs.map(() => undefined);
  const running = new Map<number, Running>();
  let stopping = false;
  let left = jobs.length;
  let batchTimer: NodeJS.Timeout | undefined;

  if (jobs.length === 0) return Promise.resolve([]);
  return new Promise<JobResult[]>((resolve) => {
    const settle = (r: JobResult) => {
      results[r.index] = r;
      left--;
      reporter.finished(r, jobs[r.index]);
      if (left === 0) {
        clearTimeout(batchTimer);
        signal?.removeEventListener('abort', onAbort);
        resolve(results as JobResult[]);
      }
    };

    const stopAll = (why: 'cancelled' | 'timed_out', note: string) => {
      if (stopping) return;
      stopping = true;
      reporter.notice(note);
      for (const index of scheduler.dropQueued()) {
        const job = jobs[index];
        settle({
          index,
          name: job.name,
          status: 'skipped',
          exitCode: null,
          signal: null,
          devices: [],
          durationMs: 0,
          tail: '',
        });
      }
      for (const [index, r] of running) stopOne(index, r, why);
    };

    const stopOne = (index: number, r: Running, why: 'cancelled' | 'timed_out') => {
      if (r.stopped !== undefined) return;
      r.stopped = why;
      clearTimeout(r.timer);
      if (r.started) {
        if (why === 'timed_out') reporter.stuck(jobs[index], r.info, r.capture);
        r.capture.note(stopNote(r));
      }
      r.run.stop(config.graceMs); // one still waiting in berth's queue is withdrawn (Cancel)
    };
    const stopNote = (r: Running) =>
      `${r.stopped === 'timed_out' ? 'timed out' : 'cancelled'}: SIGTERM, SIGKILL after ${config.graceMs} ms`;

    const onTimeout = (index: number, r: Running) => {
      const job = jobs[index];
      r.expired = true;
      if (job.stackDumpSignal && r.run.dumpStack()) {
        r.capture.note('timed out: sent SIGUSR1 for a stack dump');
        r.timer = setTimeout(
          () => stopOne(index, r, 'timed_out'),
          config.stackDumpWaitMs ?? Math.min(2000, config.graceMs),
        );
      } else stopOne(index, r, 'timed_out');
    };

    const finish = (index: number, end: RunEnd) => {
      const r = running.get(index)!;
      running.delete(index);
      clearTimeout(r.timer);
      scheduler.release(index);
      r.capture.close();
      if (r.capture.logError !== undefined) r.capture.note(`output kept in memory only: ${r.capture.logError}`);
      const job = jobs[index];
      const status = statusOf(end, r);
      const logFile = r.capture.logged ? r.capture.logFile : undefined; // no output, no log file
      settle({
        index,
        name: job.name,
        status,
        exitCode: end.exitCode,
        signal: end.signal,
        devices: status === 'skipped' ? [] : r.info.devices,
        machine: r.info.machine,
        pid: r.info.pid,
        durationMs: status === 'skipped' ? 0 : Date.now() - r.startedMs,
        logFile,
        error: status === 'skipped' ? undefined : (end.spawnError ?? end.error),
        tail: status === 'passed' ? r.capture.tail().slice(-PASSED_TAIL_CHARS) : r.capture.tail(),
      });
      if (status !== 'passed' && status !== 'skipped' && config.failFast)
        stopAll('cancelled', `fail-fast: ${job.name} ${status}; stopping the batch`);
      if (stopping) reporter.progress({ queued: 0, running: running.size }); // pump() counts no more
      pump();
    };

    const launch = (index: number, ids: number[]) => {
      const job = jobs[index];
      // the file comes with the first byte
      const capture = new OutputCapture(join(config.logDir, fileName(job)), config.ringBytes);
      const r: Running = {
        capture,
        info: { devices: ids },
        startedMs: Date.now(),
        started: false,
        run: undefined as unknown as JobRun,
      };
      running.set(index, r);
      r.run = runner.start(job, ids, capture, (info) => {
        // time and timeout count from the start (a --server job may first wait in berth's queue)
        r.info = info;
        r.startedMs = Date.now();
        r.started = true;
        if (r.stopped !== undefined) r.capture.note(stopNote(r)); // it started as it was being stopped
        if (job.timeoutMs !== undefined && r.stopped === undefined)
          r.timer = setTimeout(() => onTimeout(index, r), job.timeoutMs);
        reporter.started(job, info);
      });
      void r.run.done.then((end) => finish(index, end));
    };

    const pump = () => {
      if (stopping) return;
      for (const a of scheduler.admit()) launch(a.index, a.ids);
      reporter.progress({ queued: scheduler.queued, running: running.size });
    };

    const onAbort = () => stopAll('cancelled', 'interrupted: stopping the batch');
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    if (config.batchTimeoutMs !== undefined) {
      batchTimer = setTimeout(
        () => stopAll('timed_out', `batch timeout of ${config.batchTimeoutMs! / 1000} s reached; stopping the batch`),
        config.batchTimeoutMs,
      );
    }
    pump();
  });
}
