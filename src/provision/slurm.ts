/**
 * The Slurm provisioner (issue 12; SPEC V1): a machine is a `berth worker` batch job. A shape maps
 * to sbatch options — cpus → `-c`, ram_mb → `--mem`, gpus → `--gres=gpu:N` — plus the partition
 * and `sbatch_args`; jobs are submitted with `sbatch --parsable`, followed with `squeue`, stopped
 * with `scancel`. Without configured shapes, they are read from `sinfo`. The worker inside the job
 * takes its inventory from the job (SLURM_CPUS_ON_NODE, SLURM_MEM_PER_NODE, CUDA_VISIBLE_DEVICES).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Shape } from '../placement/provisioner.js';
import { StartError, type Backend, type EngineState } from './backend.js';
import { oneLine, runCommand, workerArgv, workerEnv, type WorkerTarget } from './worker-command.js';

/** A Slurm provisioner's settings (from the config file). */
export interface SlurmSettings {
  name: string;
  partition?: string;
  shapes?: Shape[];
  sbatchArgs: string[];
}

const PENDING = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'REQUEUE_HOLD', 'RESIZING', 'SUSPENDED']);
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** How long killNow() lets scancel run, in ms. */
const KILL_NOW_MS = 5000;
/** How long close() waits for scancelled jobs to leave squeue, in ms. */
const CLOSE_WAIT_MS = 30_000;

/** Starts `berth worker` jobs on a Slurm cluster through the Slurm commands. */
export class SlurmBackend implements Backend {
  readonly kind = 'slurm';
  readonly #jobName: string;

  constructor(
    readonly s: SlurmSettings,
    readonly target: WorkerTarget,
  ) {
    this.#jobName = `berth-${s.name}`;
  }

  /**
   * Configured shapes, else one per distinct node type `sinfo` lists, labelled with the
   * provisioner's name. @throws Error when sinfo fails or lists no node.
   */
  async shapes(): Promise<Shape[]> {
    if (this.s.shapes) return this.s.shapes;
    const where = this.s.partition ? ['-p', this.s.partition] : [];
    const r = await runCommand('sinfo', ['-h', '-o', '%c|%m|%G', ...where]);
    if (r.code !== 0)
      throw new Error(`provisioner ${this.s.name}: sinfo failed: ${oneLine(r.stderr) || `exit ${r.code}`}`);
    const seen = new Map<string, Shape>();
    for (const line of r.stdout.split('\n').filter(Boolean)) {
      const [c, m, g] = line.split('|');
      const gpus = /gpu:(?:[^:(,]+:)?(\d+)/.exec(g ?? '')?.[1];
      const ramMb = parseInt(m, 10) || undefined;
      const shape: Shape = { cpus: parseInt(c, 10), gpus: gpus ? Number(gpus) : 0, ramMb, labels: [this.s.name] };
      if (shape.cpus > 0) seen.set(`${shape.cpus}/${shape.gpus}/${shape.ramMb}`, shape);
    }
    const inPartition = this.s.partition ? ` in partition ${this.s.partition}` : '';
    if (!seen.size) throw new Error(`provisioner ${this.s.name}: sinfo lists no nodes${inPartition}`);
    return [...seen.values()];
  }

  /**
   * sbatch --parsable a worker job for `shape`; the worker is named `<provisioner>-<jobid>`.
   * @throws StartError with sbatch's own message.
   */
  async provision(shape: Shape): Promise<{ engineId: string; name: string }> {
    try {
      mkdirSync(this.target.stateDir, { recursive: true });
    } catch (e) {
      throw new StartError(`cannot create the state directory ${this.target.stateDir}: ${(e as Error).message}`);
    }
    const argv = workerArgv(this.target, `${this.s.name}-JOBID`, shape, false)
      .map(quote)
      .join(' ')
      .replace(`-JOBID'`, `-'"$SLURM_JOB_ID"`); // the job id is known only inside the job
    const log = this.logOf('%j', ''); // sbatch puts the job id in for %j
    const args = ['--parsable', `--job-name=${this.#jobName}`, `--cpus-per-task=${shape.cpus}`, `--output=${log}`];
    if (shape.ramMb !== undefined) args.push(`--mem=${shape.ramMb}`);
    if (shape.gpus > 0) args.push(`--gres=gpu:${shape.gpus}`);
    if (this.s.partition) args.push(`--partition=${this.s.partition}`);
    args.push(...this.s.sbatchArgs, '--wrap', `exec ${argv}`);
    const r = await runCommand('sbatch', args, workerEnv(this.target));
    const id = r.stdout.trim().split(';')[0];
    if (r.code !== 0 || !/^\d+$/.test(id)) {
      throw new StartError(oneLine(r.stderr) || `sbatch exited ${r.code} printing '${r.stdout.trim()}'`);
    }
    return { engineId: id, name: `${this.s.name}-${id}` };
  }

  /** Jobs among `ids` still in squeue, pending or running (a completing job is ending: absent). */
  async reconcile(ids: string[]): Promise<Map<string, EngineState>> {
    const out = new Map<string, EngineState>();
    for (const [id, state, reason] of await this.#queue()) {
      if (!ids.includes(id) || state === 'COMPLETING') continue;
      out.set(id, { state: PENDING.has(state) ? 'pending' : 'running', reason: reason === 'None' ? '' : reason });
    }
    return out;
  }

  /** Where sbatch's --output sends the job's (the worker's) output: `<state-dir>/<provisioner>-<jobid>.log`. */
  logOf(id: string, _name: string): string {
    return join(this.target.stateDir, `${this.s.name}-${id}.log`);
  }

  async stop(id: string): Promise<void> {
    const r = await runCommand('scancel', [id]);
    if (r.code !== 0) throw new Error(`scancel ${id}: ${oneLine(r.stderr) || `exit ${r.code}`}`);
  }

  /** A job in the ledger is adopted; squeue (filtered by job name) tells whether it is still there. */
  owns(): boolean {
    return true;
  }

  gone(id: string): string {
    return `Slurm job ${id} is no longer in squeue (it ended, or was cancelled outside berth)`;
  }

  describe(id: string, s: EngineState | undefined): string {
    if (id === '') return 'submitting a Slurm job';
    if (!s) return `Slurm job ${id} submitted`;
    if (s.state === 'running') return `Slurm job ${id} running`;
    return `Slurm job ${id} pending${s.reason ? ` (${s.reason})` : ''}`;
  }

  /** scancel of `ids`, waiting only for scancel itself (at most 5 s). @throws Error when scancel fails. */
  killNow(ids: string[]): void {
    if (!ids.length) return;
    const r = spawnSync('scancel', ids, {
      encoding: 'utf8',
      timeout: KILL_NOW_MS,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (r.error) throw new Error(`scancel: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`scancel ${ids.join(',')}: ${oneLine(r.stderr ?? '') || `exit ${r.status}`}`);
  }

  /** scancels `ids` and waits (at most 30 s) until squeue no longer lists them, completing ones included. */
  async close(ids: string[]): Promise<void> {
    if (!ids.length) return;
    await runCommand('scancel', ids);
    const end = Date.now() + CLOSE_WAIT_MS;
    while (Date.now() < end) {
      const left = (await this.#queue()).filter(([id]) => ids.includes(id));
      if (!left.length) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`Slurm jobs ${ids.join(',')} still in squeue ${CLOSE_WAIT_MS / 1000} s after scancel`);
  }

  /** [id, state, reason] of this provisioner's jobs. @throws Error when squeue fails. */
  async #queue(): Promise<string[][]> {
    const r = await runCommand('squeue', ['-h', `--name=${this.#jobName}`, '-o', '%i|%T|%r']);
    if (r.code !== 0) throw new Error(`squeue failed: ${oneLine(r.stderr) || `exit ${r.code}`}`);
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim().split('|'));
  }
}
