/**
 * The engine keeper's process (issue 19 item 5): a `berth worker` under the engine's name that the server starts
 * detached (its own session, so neither the server's death nor a terminal's signal reaches it) and that dials the
 * server back with the keeper secret. Its directory `<state dir>/engine-keeper` holds the secret (0600), its pid
 * record (so a restarted server waits for a live keeper rather than starting a second one), its log and its own
 * agent state (process groups, spilled output).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BERTH_ARGV } from '../berth-bin.js';
import { procStat } from './executors/kill.js';

/** A live process's start time (/proc/<pid>/stat field 22), undefined when gone. */
const startTime = (pid: number): string | undefined => procStat(pid)?.[19];

/** Metadata header carrying the keeper secret (the server admits a stream with it under the engine's name). */
export const KEEPER_HEADER = 'x-berth-keeper';

/** What the keeper is started with. Units: ms. */
export interface KeeperSpawn {
  /** `<state dir>/engine-keeper`. */
  dir: string;
  engineName: string;
  cpus: number;
  /** The address it dials. */
  server: string;
  /** SIGTERM → SIGKILL grace of its calls. */
  graceMs: number;
  /** How long its calls run on while no server is up (the server's restart hold). */
  disconnectGraceMs: number;
}

/**
 * The keeper secret of `dir`: read, or made (32 random bytes, base64url, mode 0600) on first use.
 * @throws Error `--state-dir DIR cannot be used: …` when `dir` cannot be made under the state directory.
 */
export function keeperSecret(dir: string): string {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`--state-dir ${dirname(dir)} cannot be used: ${(err as Error).message}`);
  }
  const file = join(dir, 'secret');
  try {
    const s = readFileSync(file, 'utf8').trim();
    if (s.length >= 32) return s;
  } catch {
    // none yet
  }
  const s = randomBytes(32).toString('base64url');
  writeFileSync(file, s, { mode: 0o600 });
  return s;
}

/** The pid of the keeper recorded in `dir` while it still runs (same pid and start time), else undefined. */
export function liveKeeper(dir: string): number | undefined {
  try {
    const rec = JSON.parse(readFileSync(join(dir, 'pid'), 'utf8')) as { pid?: unknown; start?: unknown };
    if (typeof rec.pid !== 'number' || rec.pid <= 1) return undefined;
    return startTime(rec.pid) === rec.start ? rec.pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts the keeper detached, logging to `<dir>/keeper.log`, and records its pid. Returns the pid.
 * @throws Error when it cannot be started (the caller runs the call in-process instead).
 */
export function spawnKeeper(o: KeeperSpawn, secret: string): number {
  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const fd = openSync(join(o.dir, 'keeper.log'), 'a');
  try {
    const [cmd, ...pre] = BERTH_ARGV;
    const args = [
      ...pre,
      'worker',
      ...['--server', o.server, '--name', o.engineName, '--cpus', String(o.cpus), '--gpus', ''],
      ...['--grace', String(o.graceMs / 1000), '--disconnect-grace', String(Math.ceil(o.disconnectGraceMs / 1000))],
      ...['--state-dir', join(o.dir, 'agent'), '--max-parallel', '0'],
    ];
    const child = spawn(cmd, args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { ...process.env, BERTH_KEEPER_SECRET: secret },
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`cannot start the engine keeper: ${cmd} ${args.join(' ')}`);
    writeFileSync(join(o.dir, 'pid'), JSON.stringify({ pid: child.pid, start: startTime(child.pid) ?? '' }));
    return child.pid;
  } finally {
    closeSync(fd);
  }
}
