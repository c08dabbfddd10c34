/**
 * Test support: real `berth serve --store etcd://…` processes of one cluster (issue 20, SPEC S7), each on a loopback
 * port chosen up front, with its own temporary state dir; every process is SIGKILLed (if still running) at cleanup.
 * `etcdSuite()` gives a test file its own etcd member and the hooks that end what each test started.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { spawnBerth, waitForLine } from './cli.js';
import { etcdMissing, startEtcd, type TestEtcd } from './etcd.js';
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

/** What `etcdSuite` gives a test file. */
export interface EtcdSuite {
  /** `describe`, or `describe.skip` outside CI when etcd is not installed (in CI the tests always run). */
  describeEtcd: typeof describe | typeof describe.skip;
  /** The file's etcd member (set in beforeAll). */
  etcd(): TestEtcd;
  /** What the current test started, ended in reverse order after it. */
  cleanup: Array<() => unknown>;
  /** A fresh cluster name: the file's tests share one etcd. */
  clusterName(): string;
  /** Two members of a new cluster: the first (with `leaderFlags` too, on `etcdAt`) leads before the second starts. */
  pair(flags?: string[], etcdAt?: string, leaderFlags?: string[]): Promise<{ name: string; a: Member; b: Member }>;
}

/** Registers the hooks of a test file of clustered servers (`file` names it in the skip warning). */
export function etcdSuite(file: string): EtcdSuite {
  const missing = etcdMissing();
  const inCI = process.env.CI === 'true';
  if (missing && !inCI) console.warn(`${file} skipped: ${missing} (in CI these tests run)`);
  let etcd: TestEtcd | undefined;
  beforeAll(async () => {
    if (!missing || inCI) etcd = await startEtcd();
  }, 30_000);
  afterAll(async () => etcd?.stop());
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  let clusters = 0;
  const clusterName = () => `t${++clusters}-${process.pid}`;
  const current = (): TestEtcd => {
    if (!etcd) throw new Error('no test etcd is running');
    return etcd;
  };
  return {
    describeEtcd: missing && !inCI ? describe.skip : describe,
    etcd: current,
    cleanup,
    clusterName,
    async pair(flags = [], etcdAt = current().endpoint, leaderFlags = []) {
      const name = clusterName();
      const a = await member(etcdAt, name, cleanup, [...flags, ...leaderFlags]);
      await serving(a);
      const b = await member(current().endpoint, name, cleanup, flags);
      return { name, a, b };
    },
  };
}
