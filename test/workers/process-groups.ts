/**
 * Test support: whether a process group still has a live (non-zombie) member, read from /proc.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** True while group `pgid` has a member that is not a zombie. */
export function groupLives(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false; // ESRCH: no process of the group is left
  }
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat = '';
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}
