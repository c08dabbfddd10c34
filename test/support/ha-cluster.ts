/**
 * Test support: an HA cluster of real `berth serve --store etcd://…` processes (SPEC S7) on loopback, sharing one
 * test etcd (etcd.ts). `member()` starts one and resolves once it leads ("berth serving") or stands by ("berth
 * standing by"); `kill()` SIGKILLs it. Every process is ended by the caller's cleanup through `stop()`.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnBerth, waitForLine } from './cli.js';
import { closedPort } from './ports.js';

/** One `berth serve` of the cluster. */
export interface Member {
  child: ChildProcess;
  address: string;
  /** Its stderr (JSON log lines) so far. */
  log(): string;
  /** SIGKILL, awaited (no-op once it exited). */
  kill(): Promise<void>;
}

let clusters = 0;

/** A fresh cluster name per call: tests share one etcd. */
export function clusterName(): string {
  return `c${process.pid}-${++clusters}`;
}

/**
 * Starts `berth serve` in `cluster` on a fresh loopback port, with a 2 s leader lease so a killed leader is
 * replaced within seconds; `extra` flags are appended. Resolves once it leads or stands by.
 */
export async function member(etcdEndpoint: string, cluster: string, extra: string[] = []): Promise<Member> {
  const address = `127.0.0.1:${await closedPort()}`;
  const child = spawnBerth([
    'serve',
    '--listen',
    address,
    '--store',
    `etcd://${etcdEndpoint}`,
    '--cluster',
    cluster,
    '--leader-ttl',
    '2',
    '--cpus',
    '1',
    '--gpus',
    '',
    '--log-level',
    'info',
    ...extra,
  ]);
  let log = '';
  child.stderr?.on('data', (b: Buffer) => (log += b.toString()));
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  try {
    await waitForLine(child, /"msg":"(berth serving|berth standing by)"/);
  } catch (e) {
    await kill();
    throw e;
  }
  return { child, address, log: () => log, kill };
}
