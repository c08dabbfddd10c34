/**
 * Default memory per core (issue 23 item 2; config `default_ram_mb_per_cpu`, Slurm's DefMemPerCPU): an ask that
 * gives no `ram_mb` asks `cpus × default` MB, so memory places it (SPEC P13) like an ask that gave it.
 */
import type { NormalizedAsk } from './types.js';

/**
 * `ask` with `ramMb` = `ask.cpus × perCpu` (MB) when it gives none; the same object when it gives one, asks no
 * cores, or `perCpu` is 0.
 */
export function withDefaultRam(ask: NormalizedAsk, perCpu: number): NormalizedAsk {
  if (perCpu <= 0 || ask.ramMb !== undefined || ask.cpus <= 0) return ask;
  return { ...ask, ramMb: Math.ceil(ask.cpus * perCpu) };
}
