/**
 * Host inventory detection: cores, RAM and NVIDIA GPUs of the machine this process runs on, within
 * what a Slurm job, the cgroup and CUDA_VISIBLE_DEVICES leave it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * What a machine has: `cpus` cores, `gpuIds` device indices, `ramMb` MB (undefined = not limited), `resources`
 * named per-machine resources in units of 1e-4 (quantity.ts; absent = none), `gpuType` the type of its GPUs
 * (`a100`, a MIG profile; absent = untyped) and `gpuNames` the names CUDA_VISIBLE_DEVICES gets for `gpuIds` in
 * order (UUIDs, MIG instances; absent = the ids). Issue 23 item 4.
 */
export interface HostInventory {
  cpus: number;
  gpuIds: number[];
  ramMb?: number;
  resources?: Record<string, number>;
  gpuType?: string;
  gpuNames?: string[];
}

/** Overrides given on the command line; each replaces the detected value when present. */
export interface InventoryOverrides {
  cpus?: number;
  gpuIds?: number[];
  ramMb?: number;
  /** Named per-machine resources in units (issue 23); there is nothing to detect, so only this sets them. */
  resources?: Record<string, number>;
}

/**
 * Lists NVIDIA GPU indices through `nvidia-smi -L` (lines `GPU 0: ...`).
 * Resolves [] when nvidia-smi is absent, fails, or does not answer within `timeoutMs`.
 */
export function detectNvidiaGpus(timeoutMs = 5000): Promise<number[]> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', ['-L'], { timeout: timeoutMs }, (err, stdout) => {
      if (err) return resolve([]);
      const ids = [...stdout.matchAll(/^GPU (\d+):/gm)].map((m) => Number(m[1]));
      resolve(ids.sort((a, b) => a - b));
    });
  });
}

/** MB in a byte count. */
const MB = 1024 * 1024;

/** `0,2,3` → [0, 2, 3]; undefined for anything but a list of device indices (UUIDs, MIG names). */
function indexList(v: string): number[] | undefined {
  if (v.trim() === '' || v.trim() === 'NoDevFiles') return [];
  const parts = v.split(',').map((x) => x.trim());
  return parts.every((x) => /^\d+$/.test(x)) ? parts.map(Number) : undefined;
}

/** Cores a cgroup v2 `cpu.max` quota allows (rounded up), or undefined without a quota. */
function cgroupCpus(): number | undefined {
  try {
    const [quota, period] = readFileSync('/sys/fs/cgroup/cpu.max', 'utf8').trim().split(/\s+/);
    if (quota === 'max') return undefined;
    const n = Math.ceil(Number(quota) / Number(period));
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What this process's surroundings limit it to (issue 12): inside a Slurm job its cores
 * (SLURM_CPUS_ON_NODE) and memory (SLURM_MEM_PER_NODE, MB); the cgroup's CPU quota and memory
 * limit (`process.constrainedMemory()`); the GPUs CUDA_VISIBLE_DEVICES (else SLURM_JOB_GPUS)
 * names. Undefined fields are not limited.
 */
export function constrainedInventory(env: NodeJS.ProcessEnv = process.env): InventoryOverrides {
  const out: InventoryOverrides = {};
  const slurmCpus = Number(env.SLURM_CPUS_ON_NODE);
  if (Number.isInteger(slurmCpus) && slurmCpus > 0) out.cpus = slurmCpus;
  else {
    const q = cgroupCpus();
    if (q !== undefined && q < os.availableParallelism()) out.cpus = q;
  }
  const limits: number[] = [];
  const slurmMem = Number(env.SLURM_MEM_PER_NODE);
  if (Number.isInteger(slurmMem) && slurmMem > 0) limits.push(slurmMem);
  const cg = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  if (cg > 0 && cg < os.totalmem()) limits.push(Math.floor(cg / MB));
  if (limits.length) out.ramMb = Math.min(...limits);
  const visible = env.CUDA_VISIBLE_DEVICES ?? env.SLURM_JOB_GPUS;
  if (visible !== undefined) out.gpuIds = indexList(visible);
  return out;
}

/**
 * Detects this host's inventory — cores from os.availableParallelism, RAM from os.totalmem, GPUs
 * from nvidia-smi — within what `constrainedInventory` allows (a Slurm job's share, the cgroup,
 * CUDA_VISIBLE_DEVICES), then applies the overrides. Detection is skipped for overridden fields.
 */
export async function detectInventory(
  overrides: InventoryOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<HostInventory> {
  const limit = constrainedInventory(env);
  const cpus = overrides.cpus ?? limit.cpus ?? os.availableParallelism();
  let gpuIds = overrides.gpuIds;
  if (gpuIds === undefined) {
    const found = await detectNvidiaGpus();
    gpuIds =
      limit.gpuIds === undefined
        ? found
        : found.length
          ? limit.gpuIds.filter((id) => found.includes(id))
          : limit.gpuIds;
  }
  const ramMb = overrides.ramMb ?? limit.ramMb ?? Math.floor(os.totalmem() / MB);
  const named = overrides.resources && Object.keys(overrides.resources).length ? overrides.resources : undefined;
  return { cpus, gpuIds: [...gpuIds].sort((a, b) => a - b), ramMb, ...(named ? { resources: named } : {}) };
}
