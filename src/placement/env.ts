/**
 * The environment an allocation sets for its node (SPEC P9).
 */
/** Variables every allocation sets: an ask or a command may not set them (SPEC R8). */
export const ALLOCATION_ENV_KEYS: readonly string[] = ['OMP_NUM_THREADS', 'CUDA_VISIBLE_DEVICES'];

/** Why `key` may not be set by an ask or a command, or undefined when it may (SPEC R8). */
export function reservedEnvKey(key: string): string | undefined {
  return ALLOCATION_ENV_KEYS.includes(key)
    ? `${key} is set by berth from the allocation (SPEC R8): an ask cannot set it`
    : undefined;
}

/**
 * `OMP_NUM_THREADS` = granted cores (at least 1: OpenMP takes only positive counts, and a
 * GPU-only claim of 0 cores still runs one host thread), `CUDA_VISIBLE_DEVICES` = granted ids comma-separated
 * (`0,1,2,3`, empty when none: CUDA reads lists, not `0-3` ranges), with the ask's own env
 * (e.g. `XLA_FLAGS`) under them: the allocation's variables win (SPEC R8; normalizeAsk refuses them).
 */
export function allocationEnv(cpus: number, gpuIds: number[], askEnv: Record<string, string>): Record<string, string> {
  return {
    ...askEnv,
    OMP_NUM_THREADS: String(Math.max(1, cpus)),
    CUDA_VISIBLE_DEVICES: gpuIds.join(','),
  };
}
