/**
 * Host inventory detection: cores, RAM and NVIDIA GPUs of the machine this process runs on.
 */
import { execFile } from 'node:child_process';
import os from 'node:os';

/** What a machine has: `cpus` cores, `gpuIds` device indices, `ramMb` MB (undefined = not limited). */
export interface HostInventory {
  cpus: number;
  gpuIds: number[];
  ramMb?: number;
}

/** Overrides given on the command line; each replaces the detected value when present. */
export interface InventoryOverrides {
  cpus?: number;
  gpuIds?: number[];
  ramMb?: number;
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

/**
 * Detects this host's inventory (cores from os.availableParallelism, RAM from os.totalmem,
 * GPUs from nvidia-smi) and applies the overrides. Detection is skipped for overridden fields.
 */
export async function detectInventory(overrides: InventoryOverrides = {}): Promise<HostInventory> {
  const cpus = overrides.cpus ?? os.availableParallelism();
  const gpuIds = overrides.gpuIds ?? (await detectNvidiaGpus());
  const ramMb = overrides.ramMb ?? Math.floor(os.totalmem() / (1024 * 1024));
  return { cpus, gpuIds: [...gpuIds].sort((a, b) => a - b), ramMb };
}
