/**
 * The environment an allocation sets for its node (SPEC P9).
 */
import { fromUnits } from '../resources/quantity.js';

/** Variables every allocation sets: an ask or a command may not set them (SPEC R8). */
export const ALLOCATION_ENV_KEYS: readonly string[] = ['OMP_NUM_THREADS', 'CUDA_VISIBLE_DEVICES', 'BERTH_GPU_SHARE'];

/** Why `key` may not be set by an ask or a command, or undefined when it may (SPEC R8). */
export function reservedEnvKey(key: string): string | undefined {
  return ALLOCATION_ENV_KEYS.includes(key)
    ? `${key} is set by berth from the allocation (SPEC R8): an ask cannot set it`
    : undefined;
}

/**
 * `OMP_NUM_THREADS` = granted cores (at least 1: OpenMP takes only positive counts, and a
 * GPU-only claim of 0 cores still runs one host thread), `CUDA_VISIBLE_DEVICES` = granted ids comma-separated
 * (`0,1,2,3`, empty when none: CUDA reads lists, not `0-3` ranges) — or, for a machine that names its devices
 * (`gpuNames`, parallel to its sorted `allIds`: UUIDs, MIG instances), their names unchanged (issue 23 item 4) —
 * and `BERTH_GPU_SHARE` = the share of that one GPU (`0.25`) when `share` (units of 1e-4) is given (SPEC P14),
 * with the ask's own env (e.g. `XLA_FLAGS`) under them: the allocation's variables win (SPEC R8; normalizeAsk
 * refuses them).
 */
export function allocationEnv(
  cpus: number,
  gpuIds: number[],
  askEnv: Record<string, string>,
  devices?: { allIds: readonly number[]; gpuNames?: readonly string[]; share?: number },
): Record<string, string> {
  const names = devices?.gpuNames;
  const env: Record<string, string> = {
    ...askEnv,
    OMP_NUM_THREADS: String(Math.max(1, cpus)),
    CUDA_VISIBLE_DEVICES: names?.length
      ? gpuIds.map((id) => names[devices?.allIds.indexOf(id) ?? -1] ?? String(id)).join(',')
      : gpuIds.join(','),
  };
  if (devices?.share) env.BERTH_GPU_SHARE = String(fromUnits(devices.share));
  return env;
}
