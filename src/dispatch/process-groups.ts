/**
 * Process groups of running jobs. Each local job runs in its own group (its pid is the group id),
 * so a signal reaches everything it started. The live groups are listed here so that, whatever
 * way dispatch leaves, none outlives it (SPEC D6): `killAllGroups` runs on process exit.
 * Signalling and liveness are the executors' (src/workers/executors/kill.ts).
 */
import { signalGroup } from '../workers/executors/kill.js';

const live = new Set<number>();
let hooked = false;

/** SIGKILLs every registered group now (synchronous; safe inside an 'exit' handler). */
export function killAllGroups(): void {
  for (const pgid of live) signalGroup(pgid, 'SIGKILL');
  live.clear();
}

/** Registers a job's group; the first call installs the exit hook that kills what is left. */
export function trackGroup(pgid: number): void {
  live.add(pgid);
  if (!hooked) {
    hooked = true;
    process.on('exit', killAllGroups);
  }
}

/** Forgets a group whose processes are all gone. */
export function untrackGroup(pgid: number): void {
  live.delete(pgid);
}
