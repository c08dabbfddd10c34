/**
 * Test support: real `berth serve --store etcd://…` processes of one cluster (issue 20, SPEC S7), each on a loopback
 * port chosen up front, with its own temporary state dir; every process is SIGKILLed (if still running) at cleanup.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { spawnBerth, waitForLine } from './cli.js';
import { closedPort } from './ports.js';

/** One clustered server. */
export interface Member {
  child: ChildProcess;
  address: string;
  client: PlacementServiceClient;
  /** stderr so far (JSON log lines). */
  log: () => string;
  /** Resolves with the exit code (or signal name) once the process exited. */
  exited: Promise<number | string>;
  /** SIGKILLs it (a crash) and waits for the exit. */
  kill(): Promise<void>;
}

/**
 * Starts `berth serve --store etcd://<etcd> --cluster <cluster> --leader-ttl 2 ...flags` and resolves once it leads
 * ("berth serving") or stands by ("berth standing by"). `cleanup` collects what ends it.
 */
export async function member(
  etcd: string,
  cluster: string,
  cleanup: Array<() => unknown>,
  flags: string[] = [],
): Promise<Member> {
  const address = `127.0.0.1:${await closedPort()}`;
  const state = mkdtempSync(join(tmpdir(), 'berth-member-'));
  const child = spawnBerth([
    'serve',
    '--listen',
    address,
    '--store',
    `etcd://${etcd}`,
    '--cluster',
    cluster,
    '--leader-ttl',
    '2',
    '--state-dir',
    state,
    '--cpus',
    '2',
    '--gpus',
    '0-1',
    '--grace',
    '1',
    ...flags,
  ]);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? '')),
  );
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(async () => {
    client.close();
    await kill();
    rmSync(state, { recursive: true, force: true });
  });
  await waitForLine(child, /"msg":"berth (serving|standing by)"/);
  return { child, address, client, log: () => err, exited, kill };
}

/** Resolves once `m` logs that it serves (it leads and restored). */
export function serving(m: Member): Promise<string> {
  return /"msg":"berth serving"/.test(m.log()) ? Promise.resolve('') : waitForLine(m.child, /"msg":"berth serving"/);
}
