/**
 * Test support: which members of a process group are still alive, read from /proc independently
 * of the code under test. A killed process whose parent died stays a zombie until init reaps it;
 * `kill(-pgid, 0)` still finds it though nothing runs, so zombies do not count.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Pids of the live (non-zombie) members of group `pgid`. */
export function liveMembers(pgid: number): number[] {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return []; // the group is gone entirely
  }
  const live: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state ppid pgrp ...
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') live.push(Number(name));
  }
  return live;
}

/** True while group `pgid` has a member that is not a zombie. */
export function groupLives(pgid: number): boolean {
  return liveMembers(pgid).length > 0;
}

/** True while process `pid` exists and is not a zombie (one awaiting its reaper counts as gone). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}
