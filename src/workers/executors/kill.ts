/**
 * Stopping process groups: SIGTERM, then SIGKILL after a grace (SPEC W6), and the set of groups
 * an executor has running, so whoever owns it can SIGKILL them all at once (second signal).
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Default grace between SIGTERM and SIGKILL, in ms. */
export const DEFAULT_GRACE_MS = 10_000;
/** Longest wait, after the SIGKILL sweep, for a group's last member to vanish, in ms. */
export const GROUP_GONE_MS = 2000;

/** Sends `sig` to the process group led by `pid`; ignores a group that is already gone. */
export function signalGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: the group is gone already
  }
}

/**
 * True while group `pgid` has a member that is not a zombie (a zombie holds nothing but its pid
 * until some reaper collects it). Without /proc, any member counts.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return true;
  }
  for (const pid of pids) {
    const [state, , pgrp] = procStat(pid) ?? []; // none: exited meanwhile
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

/**
 * The fields of /proc/<pid>/stat after "pid (comm)": [0] is the state (field 3), [2] the group,
 * [19] the start time (field 22). Undefined when the process is gone or /proc cannot be read.
 */
export function procStat(pid: number | string): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may hold spaces and parentheses: read after the last ')'
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Resolves once group `pgid` has no live member, or after `boundMs`; true when it is gone. */
export async function groupGone(pgid: number, boundMs = GROUP_GONE_MS): Promise<boolean> {
  const end = Date.now() + boundMs;
  while (groupAlive(pgid)) {
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** Resolves when `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * SIGTERM to `child`'s group (it was spawned detached), SIGKILL to the group after `graceMs` if
 * the leader still runs; once the leader is gone, SIGKILL sweeps any member left behind.
 * Resolves when the leader has exited and the group is gone (bounded by GROUP_GONE_MS after that).
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
  if (child.pid !== undefined) await groupGone(child.pid);
}

/** Where process groups are recorded while they run (each call is synchronous and must not throw). */
export interface GroupRecorder {
  added(pgid: number): void;
  forgotten(pgid: number): void;
}

/**
 * The process groups an executor has running (each child is spawned detached, so its pid is its
 * group id). `killAll()` is synchronous: safe right before `process.exit`.
 */
export class GroupSet {
  readonly #pgids = new Set<number>();

  /**
   * @param recorder told of each group started and forgotten, e.g. a state directory so that a
   *   successor can end what a killed agent left (SPEC R5, src/agent/state-dir.ts).
   */
  constructor(readonly recorder?: GroupRecorder) {}

  /** Groups tracked now. */
  get size(): number {
    return this.#pgids.size;
  }

  /** Tracks `child`'s group until `forget` (no-op when it did not start). */
  add(child: ChildProcess): void {
    if (child.pid === undefined) return;
    this.#pgids.add(child.pid);
    this.recorder?.added(child.pid);
  }

  /** Stops tracking `child`'s group. */
  forget(child: ChildProcess): void {
    if (child.pid === undefined) return;
    this.#pgids.delete(child.pid);
    this.recorder?.forgotten(child.pid);
  }

  /** SIGKILLs every tracked group now. */
  killAll(): void {
    for (const pgid of this.#pgids) signalGroup(pgid, 'SIGKILL');
  }

  /** Resolves once every tracked group is gone, or after `boundMs`; true when all are. */
  async allGone(boundMs = GROUP_GONE_MS): Promise<boolean> {
    const end = Date.now() + boundMs;
    for (const pgid of [...this.#pgids]) {
      if (!(await groupGone(pgid, Math.max(0, end - Date.now())))) return false;
    }
    return true;
  }
}
