/**
 * One server per state directory when provisioners are configured (issue 12, SPEC V3): the
 * ledgers there list the machines a server started, and a server adopts what a crashed one left.
 * Two live servers sharing the directory would adopt, and then stop, each other's machines, so the
 * second is refused. The lock is `<state-dir>/server.lock`: the holder's pid, its start time (so a
 * recycled pid is not taken for a live holder) and the address it serves.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { procStat } from '../workers/executors/kill.js';

interface Holder {
  pid: number;
  start: string;
  serving: string;
}

/** A held lock on a state directory; `release()` on shutdown. */
export class StateDirLock {
  private constructor(readonly path: string) {}

  /**
   * Takes the lock of `dir` (created when missing, mode 0700) for this process, serving `serving`.
   * A lock left by a process that no longer runs is taken over.
   * @throws Error naming the directory and the live holder (pid, address) when another server holds it;
   *   Error `--state-dir DIR cannot be used: …` with the file system's reason when it cannot be written.
   */
  static acquire(dir: string, serving: string): StateDirLock {
    const path = join(dir, 'server.lock');
    const me: Holder = { pid: process.pid, start: startOf(process.pid), serving };
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(path, JSON.stringify(me), { flag: 'wx', mode: 0o600 });
      return new StateDirLock(path);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code !== 'EEXIST') throw new Error(`--state-dir ${dir} cannot be used: ${err.message}`);
    }
    const holder = readHolder(path);
    if (holder && holder.pid !== process.pid && startOf(holder.pid) === holder.start) {
      throw new Error(
        `the state directory ${dir} belongs to another berth serve (pid ${holder.pid}, serving ${holder.serving}), ` +
          'which adopts and stops the machines its provisioners started: give this server its own --state-dir',
      );
    }
    writeFileSync(`${path}.tmp`, JSON.stringify(me), { mode: 0o600 }); // the holder is gone: take it over
    renameSync(`${path}.tmp`, path);
    return new StateDirLock(path);
  }

  /** Removes the lock file if this process still holds it. Never throws. */
  release(): void {
    try {
      if (readHolder(this.path)?.pid === process.pid) rmSync(this.path, { force: true });
    } catch {
      // a lock that cannot be removed is taken over by the next server (its holder is gone)
    }
  }
}

/** The process's start time (clock ticks since boot), '' when unknown. */
function startOf(pid: number): string {
  return procStat(pid)?.[19] ?? '';
}

function readHolder(path: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    if (typeof h.pid !== 'number' || typeof h.start !== 'string') return undefined;
    return { pid: h.pid, start: h.start, serving: String(h.serving ?? '') };
  } catch {
    return undefined;
  }
}
