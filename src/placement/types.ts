/**
 * Shapes shared by the placer and its callers (server handlers, the worker hub, dispatch).
 * Units: cpus in cores, ramMb in MB, times in ms.
 */
import type { HostInventory } from '../resources/inventory.js';

/** A machine whose books berth keeps: the engine host or an attached worker (SPEC P1). */
export interface MachineSpec {
  name: string;
  labels: string[];
  inventory: HostInventory;
  /** False for the engine host. */
  remote: boolean;
  /** Most calls at once (0 = unlimited); used by the worker hub, reported in snapshots. */
  maxParallel?: number;
  /** Agent version, reported in snapshots. */
  version?: string;
}

/** Label policy (SPEC P3, P4). */
export type LabelPolicy = 'prefer' | 'require';

/** An ask after validation and defaults: absent cpus = 1; explicit 0 = none. */
export interface NormalizedAsk {
  cpus: number;
  gpus: number;
  ramMb?: number;
  /** Named per-machine resources asked, in units of 1e-4 (resources/quantity.ts); absent = none. */
  resources?: Record<string, number>;
  /** A share of one GPU in units of 1e-4 (1..9999; then `gpus` is 0; issue 23 item 3, SPEC P14); absent = none. */
  gpuShare?: number;
  /** The GPU type required (`a100`, `1g.10gb`; issue 23 item 4); absent = any. */
  gpuType?: string;
  /** Cluster-wide pools asked (config `pools`, e.g. licenses), in units; taken with the machine's resources. */
  pools?: Record<string, number>;
  label: string;
  policy: LabelPolicy;
  node: string;
  runId: string;
  env: Record<string, string>;
  /** Who claims it, when client identities are configured (SPEC R7): only it runs in or cancels the claim. */
  owner?: string;
  /** What happens when no machine can ever hold it (issue 13): clamp (absent = clamp) or fail. */
  onOversize?: 'clamp' | 'fail';
  /**
   * How long the claim awaits its holder after its Claim stream broke without Release, in ms (SPEC S3);
   * absent = 0: given back the moment the stream ends (P8).
   */
  holdMs?: number;
  /**
   * Queue order (SPEC Q1): higher first. As asked until the placer resolves it (priority.ts); then the number every
   * ordering reads, absent = 0.
   */
  priority?: number;
  /** The priority class asked, or the config's default class the placer gave it; absent = none. */
  priorityClass?: string;
  /**
   * What preempting it does (SPEC Q2): 'cancel' ends the claim; absent = requeue: a Claim stream's claim waits again
   * at its original place (a Run's own claim is cancelled either way).
   */
  onPreempt?: 'cancel';
  /** For a claim waiting again after it was preempted: the id of the claim it first was (damping counts it). */
  requeuedFrom?: string;
}

/** What a claim holds on one machine (SPEC P9). */
export interface AllocationGrant {
  cpus: number;
  /** Sorted device ids. */
  gpuIds: number[];
  ramMb?: number;
  /** Named resources and pools held, in units of 1e-4 (issue 23 item 1); absent = none. */
  resources?: Record<string, number>;
  /** The share of `gpuIds[0]` held, in units of 1e-4 (SPEC P14); absent = whole GPUs. */
  gpuShare?: number;
  /** OMP_NUM_THREADS, CUDA_VISIBLE_DEVICES (BERTH_GPU_SHARE with a share) and the ask's env. */
  env: Record<string, string>;
}

/** A granted claim. */
export interface Grant {
  claimId: string;
  machine: string;
  remote: boolean;
  allocation: AllocationGrant;
  /** The ask was cut down to the best real machine (SPEC P5). */
  clamped: boolean;
  /** A preferred label could not be honoured (SPEC P4). */
  fellBack: boolean;
  ask: NormalizedAsk;
  /**
   * The lease is over: aborted with BerthError('unavailable', "worker <name> went away …") when the
   * machine leaves, or BerthError('cancelled', "claim <id> released (…)") on release (SPEC R5).
   */
  lost: AbortSignal;
}

/** Why a claim waits (SPEC P6); mirrors berth.v1.Queued. */
export interface QueuedInfo {
  claimId: string;
  /** e.g. "2 cpu(s)", "1 gpu(s) and 1 cpu(s)". */
  detail: string;
  wanted: { cpus: number; gpus: number; ramMb?: number; share?: number };
  bestMachine: string;
  bestFree: { cpus: number; gpus: number; ramMb?: number; share?: number };
  machinesAble: number;
  /** 1-based. */
  position: number;
  /** What was asked before clamping. */
  asked?: { cpus: number; gpus: number; ramMb?: number; share?: number };
  /** The claim's priority (SPEC Q1); absent = 0. */
  priority?: number;
  /** Set when a preempted claim waits again at its place (SPEC Q2, requeue.ts). */
  requeued?: boolean;
}
