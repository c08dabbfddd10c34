/**
 * The chaos driver's processes and traces: the server as its own process (test/chaos/serve.ts,
 * SIGKILLed and started again on one port and journal), and the per-execution markers that show
 * no call id ran twice (each command appends its pid to `<dir>/<call id>` as its first act).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/cli.js';

/** The server process: its child, and a promise resolved once it serves. */
export interface ServerProc {
  child: ChildProcess;
  /** Resolves with the ms the process took from start to serving. */
  serving: Promise<number>;
  exited: Promise<void>;
}

/**
 * Starts test/chaos/serve.ts on `listen` with its journal in `stateDir`, logging to `logFile`; `onInvariant` gets
 * each books invariant it reports broken, `onWorker` each worker attach/detach. Rejects `serving` when it exits
 * first.
 */
export function startServerProc(
  listen: string,
  stateDir: string,
  logFile: string,
  onInvariant: (message: string) => void,
  onWorker: (kind: string, machine: string) => void,
): ServerProc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/chaos/serve.ts', listen, stateDir, logFile], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr?.resume();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const serving = new Promise<number>((resolve, reject) => {
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        const o = JSON.parse(line) as {
          serving?: string;
          ms?: number;
          invariant?: string;
          kind?: string;
          machine?: string;
        };
        if (o.serving) resolve(o.ms ?? NaN);
        if (o.invariant) onInvariant(o.invariant);
        if (o.kind && o.machine) onWorker(o.kind, o.machine);
      }
    });
    void exited.then(() => reject(new Error(`chaos server exited (${child.exitCode ?? child.signalCode})`)));
  });
  serving.catch(() => undefined);
  return { child, serving, exited };
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
