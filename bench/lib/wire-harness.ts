/**
 * Bench support for claim cycles over the wire (bench/wire.bench.ts, bench/journal.bench.ts): server
 * and client children pinned to separate cores with `taskset` when there are two or more, CPU time
 * from /proc, and a real `berth serve` (compiled, as users run it) on a temporary state directory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials } from '@grpc/grpc-js';
import { BERTH_BIN } from '../../src/berth-bin.js';
import { benchStateDir } from '../support.js';

const wireDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'wire');

/** True when server and client can be pinned to cores 0 and 1. */
export const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** `cmd` pinned to `core` when the machine allows. */
export function pin(cmd: string[], core: number): [string, string[]] {
  const [c, ...rest] = pinned ? ['taskset', '-c', String(core), ...cmd] : cmd;
  return [c, rest];
}

/** Spawns bench/wire/`script` under node+tsx (pinned to `core` when possible) with an IPC channel. */
export function child(script: string, args: string[], core: number): ChildProcess {
  const [cmd, rest] = pin([process.execPath, '--import', 'tsx', join(wireDir, script), ...args], core);
  return spawn(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/** The next IPC message of `c`; rejects when it exits first. */
export function nextMessage<T>(c: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`bench child exited ${code}`));
    c.once('exit', onExit);
    c.once('message', (m) => {
      c.off('exit', onExit);
      resolve(m as T);
    });
  });
}

const TICK_US = 1e6 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
/** CPU time (user + system, µs) the process `pid` has used so far, from /proc (Linux). */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** A loopback port free a moment ago (berth at warn prints no "berth serving" line to read it from). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once a gRPC channel to 127.0.0.1:`port` is ready (berth is serving). */
export function health(port: number): Promise<void> {
  const c = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  return new Promise<void>((resolve, reject) =>
    c.waitForReady(Date.now() + 20_000, (e) => {
      c.close();
      if (e) reject(e);
      else resolve();
    }),
  );
}

/** A started server child: its port and process, and `stop()` (SIGTERM, wait, state dir removed). */
export interface ServerChild {
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The real CLI as users run it (`node bin/berth.js serve`, compiled JavaScript) on core 0, 4096 cores and no
 * GPU, logging at `logLevel` (at info every grant and release is a log line), with `flags` after; its journal
 * on a temporary state directory. `nodeArgs` go to node (e.g. --cpu-prof). Under `taskset`, pid is the server's.
 */
export async function startBerthServer(
  flags: string[],
  logLevel: string,
  nodeArgs: string[] = [],
): Promise<ServerChild> {
  const port = await freePort();
  const stateDir = benchStateDir();
  const serve = [BERTH_BIN, 'serve', '--listen', `127.0.0.1:${port}`, '--cpus', '4096', '--gpus', '', '--grace', '1'];
  const [cmd, rest] = pin([process.execPath, ...nodeArgs, ...serve, '--state-dir', stateDir, ...flags], 0);
  const env = { ...process.env, BERTH_LOG_LEVEL: logLevel };
  const proc = spawn(cmd, rest, { stdio: ['ignore', 'ignore', 'pipe'], env });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
  const exited = new Promise<never>((_, reject) =>
    proc.once('exit', (code) => reject(new Error(`berth serve exited ${code}: ${err}`))),
  );
  exited.catch(() => {});
  await Promise.race([health(port), exited]);
  return {
    port,
    proc,
    async stop() {
      const gone = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await gone;
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
