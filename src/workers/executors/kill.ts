/**
 * Stopping a process group: SIGTERM, then SIGKILL after a grace (SPEC W6).
 */
import type { ChildProcess } from 'node:child_process';

/** Default grace between SIGTERM and SIGKILL, in ms. */
export const DEFAULT_GRACE_MS = 10_000;

/** Sends `sig` to the process group led by `pid`; ignores a group that is already gone. */
export function signalGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: the group is gone already
  }
}

/** Resolves when `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * SIGTERM to `child`'s group (it was spawned detached), SIGKILL to the group after `graceMs` if
 * the leader still runs; once the leader is gone, SIGKILL sweeps any member left behind.
 * Resolves when the leader has exited.
 */
export async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  signalGroup(child.pid, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), graceMs);
  try {
    await exited(child);
  } finally {
    clearTimeout(timer);
    signalGroup(child.pid, 'SIGKILL');
  }
}
