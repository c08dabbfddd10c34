/**
 * The survival bench's processes (issue 19 targets): a real `berth serve` on a fixed loopback port with
 * its journal, real `berth worker` agents (optionally through a cuttable TCP proxy, test/support/link-proxy.ts),
 * and Runs followed to their end. Every process started is tracked and ended by `stopAll()`.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { spawnBerth, waitForLine } from '../../test/support/cli.js';
import { closedPort } from '../../test/support/ports.js';
import { snapshot } from '../../test/support/snapshot.js';
import { until } from '../../test/support/until.js';

/** Every process started here (and by the takeover bench's members), ended by `stopAll()`. */
export const started = new Set<ChildProcess>();
const dirs: string[] = [];

/** A temporary directory, removed by `stopAll()`. */
export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `berth-survival-${prefix}-`));
  dirs.push(d);
  return d;
}

/** SIGKILLs (or `signal`s) a process and waits for its exit. */
export async function kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await gone;
}

/** Ends every process started here and removes the temporary directories. */
export async function stopAll(): Promise<void> {
  for (const c of started) await kill(c);
  started.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A free loopback address. */
export async function freeAddress(): Promise<string> {
  return `127.0.0.1:${await closedPort()}`;
}

/** `berth serve` on `address` with its journal in `stateDir`; resolves once it serves: ms from spawn, its log. */
export async function serve(
  address: string,
  stateDir: string,
  extra: string[] = [],
): Promise<{ child: ChildProcess; ms: number; log: () => string }> {
  const t0 = performance.now();
  const child = spawnBerth([
    'serve',
    '--listen',
    address,
    '--state-dir',
    stateDir,
    '--cpus',
    '1',
    '--gpus',
    '',
    ...extra,
  ]);
  started.add(child);
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  await waitForLine(child, /"msg":"berth serving"/);
  child.stdout?.resume();
  return { child, ms: performance.now() - t0, log: () => log };
}

/** `berth worker --name <name> --labels w` dialling `server`, with its own state dir unless `stateDir`. */
export function worker(server: string, name: string, args: string[], stateDir = tempDir(name)): ChildProcess {
  const child = spawnBerth([
    'worker',
    '--server',
    server,
    '--name',
    name,
    '--labels',
    'w',
    '--state-dir',
    stateDir,
    '--grace',
    '1',
    '--log-level',
    'info',
    ...args,
  ]);
  started.add(child);
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}

/** A client of `address` that reconnects fast. */
export function client(address: string): PlacementServiceClient {
  return new PlacementServiceClient(address, credentials.createInsecure(), {
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 500,
  });
}

/** Resolves once every machine of `names` is connected. */
export async function attached(c: PlacementServiceClient, names: string[], ms = 60_000): Promise<void> {
  await until(
    async () => {
      const s = await snapshot(c).catch(() => undefined);
      return names.every((n) => s?.machines.some((m) => m.name === n && m.state === 1));
    },
    ms,
    100,
  );
}
