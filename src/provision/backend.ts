/**
 * What one kind of provisioner does against its engine (SPEC P10 `provision`, `reconcile`,
 * `shapes`): start a `berth worker` machine of a shape, list which of its machines the engine
 * still has, stop one. The provisioning loop (loop.ts) decides when; a backend only does.
 */
import type { Shape } from '../placement/provisioner.js';

/** A machine the engine accepted: its id there (Slurm job id, pid) and the worker name it attaches under. */
export interface Started {
  engineId: string;
  name: string;
}

/** The engine's view of one machine: `pending` (queued) or `running`, with the engine's reason. */
export interface EngineState {
  state: 'pending' | 'running';
  /** e.g. "Resources", "Priority" (Slurm's pending reason); '' when none. */
  reason: string;
}

/** Thrown when a start fails; `message` is the engine's own (e.g. sbatch's stderr). */
export class StartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartError';
  }
}

/** One kind of provisioner: slurm or local. */
export interface Backend {
  readonly kind: 'slurm' | 'local';
  /** Shapes of machines it can start; a Slurm backend may read them from sinfo when none are configured. */
  shapes(): Promise<Shape[]>;
  /**
   * Starts a machine of `shape`, under a worker name for which `taken` is false (a backend that picks
   * names, local, skips taken ones; Slurm's `<provisioner>-<jobid>` is unique by the job id).
   * @throws StartError with the engine's message.
   */
  provision(shape: Shape, taken?: (name: string) => boolean): Promise<Started>;
  /**
   * Which of `ids` the engine still has (absent = gone: died, finished or cancelled outside berth).
   * @throws Error when it cannot tell.
   */
  reconcile(ids: string[]): Promise<Map<string, EngineState>>;
  /** Asks the engine to stop machine `id` (scancel, SIGTERM to the group); resolves once asked. */
  stop(id: string): Promise<void>;
  /** True when machine `id`, listed in the ledger under `name`, may be adopted (a local pid still runs that worker). */
  owns(id: string, name: string): boolean;
  /** Why machine `id` is gone, as far as the engine tells (e.g. "worker process 12 exited with code 1: …"). */
  gone(id: string): string;
  /** Path of the log file the worker of machine `id`, named `name`, writes (its last line explains failed starts). */
  logOf(id: string, name: string): string;
  /** Human words for a machine, e.g. "Slurm job 12 pending (Resources)". */
  describe(id: string, s: EngineState | undefined): string;
  /** Ends machines `ids` at once, synchronously, without waiting for them (second signal). @throws Error. */
  killNow(ids: string[]): void;
  /** Stops every machine it started and resolves once the engine no longer has them (bounded). */
  close(ids: string[]): Promise<void>;
}
