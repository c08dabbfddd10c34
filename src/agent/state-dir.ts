/**
 * The agent's state directory (SPEC R5, issue 10 item 8): one file per process group the agent has
 * running, and the agent's own pid; calls' outboxes spill under the agent's own record (SPEC S1).
 * An agent that starts ends the groups a killed predecessor left
 * (their watchdogs may have been killed too) before it says Hello, so the books never offer GPUs
 * that a leftover process still uses. A group file names the leader's pid and start time, so a
 * recycled pid is never taken for a leftover.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import { groupAlive, groupGone, procStat, signalGroup, type GroupRecorder } from '../workers/executors/kill.js';

/** Longest wait for a leftover group to vanish after SIGKILL, in ms. */
const LEFTOVER_GONE_MS = 5000;

/** A live process's start time (clock ticks since boot, /proc/<pid>/stat field 22); undefined when gone or unknown. */
export function startTime(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

/**
 * One agent's state directory. Each agent records its groups under `agent-<pid>-<start time>/`, so
 * agents sharing a directory (two started with one name: SPEC W1 lets the newer one stay) never
 * take each other's records for leftovers.
 */
export class StateDir implements GroupRecorder {
  #own?: string;

  /** @param dir created when missing (mode 0700) */
  constructor(
    readonly dir: string,
    readonly log: Logger,
  ) {}

  /**
   * Ends what dead predecessors left: for each `agent-*` record whose agent no longer runs, every
   * recorded group still alive is SIGKILLed and awaited (bounded), and the record removed. Then
   * this agent's own record is made. Returns the pgids ended.
   * @throws Error when the directory cannot be created or written.
   */
  async takeOver(): Promise<number[]> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const ended: number[] = [];
    for (const name of readdirSync(this.dir)) {
      const m = /^agent-(\d+)-(\d*)$/.exec(name);
      if (!m || startTime(Number(m[1])) === m[2]) continue; // a live agent's (this one's included)
      const sub = join(this.dir, name);
      for (const file of readdirSync(sub)) {
        const rec = /^group-\d+$/.test(file) ? readRecord(join(sub, file)) : undefined;
        if (rec && isLeftover(rec)) {
          signalGroup(rec.pid, 'SIGKILL');
          ended.push(rec.pid);
        }
      }
      rmSync(sub, { recursive: true, force: true });
    }
    for (const pgid of ended) {
      if (!(await groupGone(pgid, LEFTOVER_GONE_MS))) {
        this.log.warn({ pgid }, 'a leftover process group survived SIGKILL');
      }
    }
    if (ended.length) {
      this.log.warn({ groups: ended, dir: this.dir }, 'ended process groups a previous agent left running');
    }
    const own = join(this.dir, `agent-${process.pid}-${startTime(process.pid) ?? ''}`);
    mkdirSync(own, { recursive: true, mode: 0o700 });
    this.#own = own;
    return ended;
  }

  /** This agent's own record directory (its call outboxes spill under it); undefined before takeOver(). */
  get own(): string | undefined {
    return this.#own;
  }

  /** Records group `pgid` (its leader's pid). No-op before takeOver(). */
  added(pgid: number): void {
    if (!this.#own) return;
    try {
      writeAtomic(join(this.#own, `group-${pgid}`), { pid: pgid, start: startTime(pgid) ?? '' });
    } catch (err) {
      this.log.warn({ pgid, reason: (err as Error).message }, 'cannot record a process group in the state directory');
    }
  }

  /** Forgets group `pgid`. */
  forgotten(pgid: number): void {
    if (this.#own) rmSync(join(this.#own, `group-${pgid}`), { force: true });
  }
}

/**
 * True when the recorded group still runs something of ours: its leader with the recorded start
 * time, or — the leader gone — any member (a pgid is not reused while its group has members).
 */
function isLeftover(rec: { pid: number; start: string }): boolean {
  const now = startTime(rec.pid);
  if (now !== undefined) return now === rec.start;
  return groupAlive(rec.pid);
}

function readRecord(file: string): { pid: number; start: string } | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; start?: unknown };
    const ok = Number.isSafeInteger(v.pid) && (v.pid as number) > 1 && typeof v.start === 'string';
    return ok ? { pid: v.pid as number, start: v.start as string } : undefined;
  } catch {
    return undefined;
  }
}

function writeAtomic(file: string, value: unknown): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, JSON.stringify(value), { mode: 0o600 });
  renameSync(tmp, file);
}
