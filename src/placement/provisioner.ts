/**
 * The placer's hook into provisioning (SPEC P10, V1–V4): backends that can start machines of known
 * shapes (a local process pool, a Slurm cluster, …). An ask no attached machine can hold but a
 * provisioner covers waits for the machine it starts instead of being clamped. The placer calls
 * the hook; the hook never calls the placer, only the two callbacks the placer binds.
 */
import type { Amount } from '../resources/books.js';
import type { NormalizedAsk, QueuedInfo } from './types.js';

/**
 * A machine shape a provisioner can start: cores, GPU count, MB (absent = not limited), labels, and named
 * per-machine resources in units of 1e-4 (absent = none; an ask naming one only such a shape covers).
 */
export interface Shape {
  cpus: number;
  gpus: number;
  ramMb?: number;
  labels: string[];
  resources?: Record<string, number>;
  /** The type of its GPUs (issue 23 item 4); absent = untyped. */
  gpuType?: string;
}

/** A waiting claim that no attached machine can ever hold (the demand of SPEC V2). */
export interface Unmet {
  claimId: string;
  ask: NormalizedAsk;
  amount: Amount;
}

/**
 * What provisioning sees of the books after each change: unmet demand in arrival order, one ask
 * per wait class of every other waiting claim (a machine already starting stays wanted while one
 * of them fits it), attached workers with their claim counts.
 */
export interface DemandView {
  unmet: Unmet[];
  waiting: Pick<Unmet, 'ask' | 'amount'>[];
  machines: { name: string; claims: number }[];
}

/** The lifecycle states of a provisioned machine, in order. */
export const PROVISIONED_STATES = ['starting', 'running', 'idle', 'stopping'] as const;

/** Lifecycle of a provisioned machine, as shown by GetSnapshot and `berth status`. */
export type ProvisionedState = (typeof PROVISIONED_STATES)[number];

/** One machine a provisioner started. `engineId`: Slurm job id or local pid. */
export interface ProvisionedView {
  name: string;
  engineId: string;
  state: ProvisionedState;
  /** e.g. "Slurm job 12 pending (Resources)". */
  detail: string;
  /** ms in this state. */
  sinceMs: number;
}

/** One provisioner as GetSnapshot shows it. */
export interface ProvisionerView {
  name: string;
  kind: string;
  shapes: Shape[];
  maxMachines: number;
  machines: ProvisionedView[];
  /** The engine's own message of the last failed start or reconcile; '' when none. */
  lastError: string;
  /** One line: "2 machine(s): 1 starting, 1 running" or "no machines". */
  status: string;
}

/** What the placer lets provisioning do to it. */
export interface PlacerCallbacks {
  /** Removes an idle machine from the books before it is stopped; false when it holds a claim (then it stays). */
  retire(name: string, why: string): boolean;
  /** The provisioning reason of these waiting claims changed: send each a fresh Queued. */
  requeue(claimIds: string[]): void;
}

/** The provisioning loop as the placer sees it. */
export interface Provisioning {
  /** Binds the placer's callbacks; called once by the placer's constructor. */
  bind(placer: PlacerCallbacks): void;
  /** True when some provisioner's shape would hold `ask` (its label too, when required). */
  covers(ask: NormalizedAsk): boolean;
  /** True when some shape has GPUs of type `t` (an ask naming it may wait for such a machine). */
  coversGpuType(t: string): boolean;
  /** The shapes carrying `label`, in words ("hpc: 2 cpu(s) [hpc]"), '' when none does: why `covers` said no. */
  shapesWithLabel(label: string): string;
  /** The books changed: re-plan demand against supply. Synchronous; starts happen in the background. */
  plan(view: DemandView): void;
  /** Why a waiting claim waits on a provisioner, e.g. "waiting for hpc: Slurm job 12 pending (Resources)". */
  reason(claimId: string): string | undefined;
  /** Each provisioner's shapes, machines and last error. */
  statuses(): ProvisionerView[];
}

/** The Queued detail with a provisioner's reason appended (SPEC P10): "2 cpu(s); waiting for hpc: …". */
export function withReason(q: QueuedInfo, why: string | undefined): QueuedInfo {
  return why ? { ...q, detail: `${q.detail}; ${why}` } : q;
}
