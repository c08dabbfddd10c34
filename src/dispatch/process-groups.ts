/**
 * Process groups of running jobs. Each local job runs in its own group (its pid is the group id),
 * so a signal reaches everything it started. The live groups are listed here so that, whatever
 * way dispatch leaves, none outlives it (SPEC D6): `killAllGroups` runs on process exit.
 */

const live = new Set<number>();
let hooked = false;

/** Sends `signal` to process group `pgid`; returns false when no process of the group is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

/** True while any process of group `pgid` exists. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

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
