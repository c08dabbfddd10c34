/**
 * The environment an allocation sets for its node (SPEC P9).
 */
/**
 * `OMP_NUM_THREADS` = granted cores (at least 1: OpenMP takes only positive counts, and a
 * GPU-only claim of 0 cores still runs one host thread), `CUDA_VISIBLE_DEVICES` = granted ids comma-separated
 * (`0,1,2,3`, empty when none: CUDA reads lists, not `0-3` ranges), then the ask's own env (ask keys win: the engine asked for them explicitly).
 */
export function allocationEnv(cpus: number, gpuIds: number[], askEnv: Record<string, string>): Record<string, string> {
  return {
    OMP_NUM_THREADS: String(Math.max(1, cpus)),
    CUDA_VISIBLE_DEVICES: gpuIds.join(','),
    ...askEnv,
  };
}
