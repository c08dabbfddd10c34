/**
 * How many `berth dispatch` jobs run at once (`-j`), apart from the option schemas (no zod), for the
 * process that starts jobs.
 */

/**
 * The most jobs in flight: `-j N` as given; `auto` = the number of devices, or for a platform
 * whose name ends in `sim` (a simulator that runs on cores) min(cores, devices); never below 1.
 */
export function jobsLimit(jobs: number | 'auto', devices: number, cores: number, platform?: string): number {
  if (jobs !== 'auto') return jobs;
  const n = platform?.endsWith('sim') ? Math.min(cores, devices) : devices;
  return Math.max(1, n);
}
