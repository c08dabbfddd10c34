/**
 * The chaos driver's processes and traces: the server as its own process (test/chaos/serve.ts,
 * SIGKILLed and started again on one port and journal, or several members of one cluster on etcd), and the
 * per-execution markers that show no call id ran twice (each command appends its pid to `<dir>/<call id>` as its
 * first act).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/cli.js';

/** The server process: its child, and promises resolved once it stands by or serves, and once it exited. */
export interface ServerProc {
  child: ChildProcess;
  /** Its listen address. */
  address: string;
  /** Resolves with the ms the process took from start to serving (for a cluster member: until it led). */
  serving: Promise<number>;
  /** Resolves once it serves or (a cluster member) stands by. */
  ready: Promise<'serving' | 'standby'>;
  /** When it said it serves (ms since the Unix epoch; 0 until then), and its epoch then (0 without a cluster). */
  servingAt: number;
  epoch: number;
  /** Why it stopped acting, when it was deposed (it exits 3 then). */
  deposed?: string;
  exited: Promise<void>;
}

/** What the server process reports besides serving: broken invariants and worker attaches/detaches. */
export interface ServerWatch {
  onInvariant: (message: string) => void;
  onWorker: (kind: string, machine: string) => void;
}

/** A cluster membership for startServerProc: `etcd://host:port`, the cluster name, the leader TTL (s). */
export interface Membership {
  store: string;
  cluster: string;
  ttlS: number;
}

/**
 * Starts test/chaos/serve.ts on `listen` with its journal in `stateDir` (or, with `ha`, as a member of that cluster),
 * logging to `logFile`. Rejects `serving` and `ready` when it exits first.
 */
export function startServerProc(
  listen: string,
  stateDir: string,
  logFile: string,
  watch: ServerWatch,
  ha?: Membership,
): ServerProc {
  const extra = ha ? [ha.store, ha.cluster, String(ha.ttlS)] : [];
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/chaos/serve.ts', listen, stateDir, logFile, ...extra],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stderr?.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let ready!: (how: 'serving' | 'standby') => void;
  const proc: ServerProc = {
    child,
    address: listen,
    serving: Promise.resolve(0),
    ready: new Promise((resolve) => (ready = resolve)),
    servingAt: 0,
    epoch: 0,
    exited,
  };
  const gone = () => new Error(`chaos server exited (${child.exitCode ?? child.signalCode})`);
  proc.ready = Promise.race([proc.ready, exited.then(() => Promise.reject(gone()))]);
  proc.serving = new Promise<number>((resolve, reject) => {
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        const o = JSON.parse(line) as {
          serving?: string;
          standby?: string;
          deposed?: string;
          ms?: number;
          epoch?: number;
          invariant?: string;
          kind?: string;
          machine?: string;
        };
        if (o.serving) {
          proc.servingAt = Date.now();
          proc.epoch = o.epoch ?? 0;
          ready('serving');
          resolve(o.ms ?? NaN);
        }
        if (o.standby) ready('standby');
        if (o.deposed) proc.deposed = o.deposed;
        if (o.invariant) watch.onInvariant(o.invariant);
        if (o.kind && o.machine) watch.onWorker(o.kind, o.machine);
      }
    });
    void exited.then(() => reject(gone()));
  });
  proc.serving.catch(() => undefined);
  proc.ready.catch(() => undefined);
  return proc;
}

/** Sends `signal` to a process and waits for it to exit (at once if it has). */
export async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill(signal);
  await gone;
}

/** The shell prefix that records one execution: the pid appended to `$BERTH_CHAOS_MARK/$BERTH_CHAOS_CALL`. */
export const MARK = 'echo $$ >> "$BERTH_CHAOS_MARK/$BERTH_CHAOS_CALL"; ';

/** The env a command needs for MARK: the markers' directory and its call id (a file name: ':' kept). */
export function markEnv(dir: string, callId: string): Record<string, string> {
  return { BERTH_CHAOS_MARK: dir, BERTH_CHAOS_CALL: callId.replace(/[^A-Za-z0-9_.:-]/g, '_') };
}

/** Executions recorded in `dir`: how many in all, and each call id that ran more than once with its pids. */
export function executions(dir: string): { total: number; twice: string[] } {
  let total = 0;
  const twice: string[] = [];
  for (const f of readdirSync(dir)) {
    const pids = readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean);
    total += pids.length;
    if (pids.length > 1) twice.push(`${f}: ran ${pids.length} times (pids ${pids.join(', ')})`);
  }
  return { total, twice };
}
