/**
 * Test support: a real one-member etcd (Debian's etcd-server, `scripts/etcd-up.sh` installs it) per test file, on
 * loopback ports of its own with a temporary data dir, ended (and its dir removed) by `stop()`. Tests that need it
 * are skipped, saying why, when no `etcd` binary is installed; in CI (CI=true) they run and fail instead.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { closedPort } from './ports.js';

/** Why etcd tests cannot run here, or undefined when `etcd` is installed. */
export function etcdMissing(): string | undefined {
  const r = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return 'no etcd binary (apt-get install etcd-server, or run scripts/etcd-up.sh)';
  return /etcd Version: 3\./.test(r.stdout) ? undefined : `etcd 3 needed (found ${r.stdout.split('\n')[0]})`;
}

/** A running etcd member. */
export interface TestEtcd {
  /** `127.0.0.1:<client port>`. */
  endpoint: string;
  /** A client of it (closed by stop). */
  client: Etcd3;
  stop(): Promise<void>;
}

/** Starts etcd and waits (up to 20 s) until it answers. */
export async function startEtcd(): Promise<TestEtcd> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-etcd-'));
  const [port, peer] = [await closedPort(), await closedPort()];
  const endpoint = `127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    'etcd',
    [
      '--name=t',
      `--data-dir=${join(dir, 'data')}`,
      `--listen-client-urls=http://${endpoint}`,
      `--advertise-client-urls=http://${endpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=t=http://127.0.0.1:${peer}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
  const client = new Etcd3({ hosts: `http://${endpoint}`, dialTimeout: 1000 });
  const stop = async () => {
    client.close();
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const end = Date.now() + 20_000;
  for (;;) {
    try {
      await client.get('berth-probe').string();
      return { endpoint, client, stop };
    } catch {
      if (child.exitCode !== null || Date.now() > end) {
        await stop();
        throw new Error(`etcd did not start on ${endpoint}: ${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
