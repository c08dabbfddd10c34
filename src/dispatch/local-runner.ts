/**
 * LocalRunner: runs jobs as subprocesses of this host (the embedded default, SPEC D8). Each job
 * runs in a new process group with `{devices}` replaced by the id range (`0-3`) and the device
 * variable set to the ids comma-separated (`0,1,2,3`: CUDA and Ascend parse lists, not ranges) (SPEC D4); stdout and
 * stderr are read as bytes into the job's OutputCapture (SPEC D5). Stopping sends SIGTERM to the group and SIGKILL
 * after the grace (SPEC D6). When the job's main process exits, whatever it left in its group is SIGKILLed so nothing
 * outlives its job.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { formatRange } from '../resources/ranges.js';
import type { OutputCapture } from './capture.js';
import type { Job, JobRun, RunEnd, Runner, StartInfo } from './job.js';
import { groupAlive, signalGroup } from '../workers/executors/kill.js';
import { cwdProblem } from '../workers/executors/watchdog.js';
import { trackGroup, untrackGroup } from './process-groups.js';

/** The variable that tells a job asking a share of one device (`devices: 0.5`) its share, as berth's env does. */
export const SHARE_ENV = 'BERTH_GPU_SHARE';

/** Placeholder replaced by the granted device range in argv and shell lines. */
export const DEVICES_PLACEHOLDER = '{devices}';

/**
 * What the program, its arguments and its environment are for `job` on `ids` (sorted): `{devices}`
 * becomes the range string (`0-3`), `deviceEnv` the comma list (`0,1,2,3`, as berth sets it for
 * `--server` jobs too), and SHARE_ENV the share for a job asking a share of one device; the job's own env wins.
 */
export function commandFor(
  job: Job,
  ids: readonly number[],
  deviceEnv: string,
  base: NodeJS.ProcessEnv = process.env,
): { file: string; args: string[]; env: NodeJS.ProcessEnv } {
  const range = formatRange(ids);
  const argv = job.argv !== undefined ? job.argv : ['sh', '-c', job.shell ?? ''];
  const [file, ...args] = argv.map((a) => a.replaceAll(DEVICES_PLACEHOLDER, range));
  // a share of one device (`devices: 0.5`) is said as berth says it for a fractional GPU (SPEC P14)
  const share = job.devices > 0 && job.devices < 1 ? { [SHARE_ENV]: String(job.devices) } : {};
  return { file, args, env: { ...base, [deviceEnv]: ids.join(','), ...share, ...job.env } };
}

/** Runs jobs on this host. */
export class LocalRunner implements Runner {
  /** dispatch's env, read once: process.env is slow to copy (every read asks the C library). */
  readonly #env: NodeJS.ProcessEnv = { ...process.env };

  /** @param deviceEnv variable that receives the device range, e.g. CUDA_VISIBLE_DEVICES. */
  constructor(readonly deviceEnv: string) {}

  /** See Runner.start. */
  start(job: Job, ids: number[], capture: OutputCapture, onStarted: (info: StartInfo) => void): JobRun {
    const { file, args, env } = commandFor(job, ids, this.deviceEnv, this.#env);
    const failed = (spawnError: string): JobRun => ({
      done: Promise.resolve({ exitCode: null, signal: null, spawnError }),
      stop: () => {},
      dumpStack: () => false,
    });
    const bad = job.cwd === undefined ? undefined : cwdProblem(job.cwd);
    if (bad !== undefined) return failed(bad);
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(file, args, { cwd: job.cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      return failed(`cannot start ${file}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const pid = child.pid;
    let killTimer: NodeJS.Timeout | undefined;
    let exited = false;
    const done = new Promise<RunEnd>((resolve) => {
      child.stdout.on('data', (b: Buffer) => capture.take('stdout', b));
      child.stderr.on('data', (b: Buffer) => capture.take('stderr', b));
      child.once('error', (err: NodeJS.ErrnoException) => {
        if (pid === undefined)
          resolve({
            exitCode: null,
            signal: null,
            spawnError: `cannot start ${file}: ${err.code === 'ENOENT' ? 'no such program' : err.message}`,
          });
      });
      child.once('exit', () => {
        exited = true;
        if (pid !== undefined && groupAlive(pid)) signalGroup(pid, 'SIGKILL'); // leftovers of a finished job
      });
      child.once('close', (code, signal) => {
        clearTimeout(killTimer);
        if (pid === undefined) return;
        untrackGroup(pid);
        resolve({ exitCode: code, signal });
      });
    });
    if (pid !== undefined) {
      trackGroup(pid);
      onStarted({ pid, devices: ids });
    }
    return {
      done,
      stop(graceMs: number) {
        if (pid === undefined || exited || killTimer !== undefined) return;
        signalGroup(pid, 'SIGTERM');
        killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      },
      dumpStack() {
        if (pid === undefined || exited) return false;
        try {
          process.kill(pid, 'SIGUSR1'); // the main process only: SIGUSR1 would kill helpers that do not expect it
          return true;
        } catch {
          return false;
        }
      },
    };
  }

  /** Always ready. */
  async ready(): Promise<void> {}

  /** Nothing to release. */
  close(): void {}
}
