/**
 * `berth serve --store etcd://…` over TLS with a client certificate (issue 20: TLS options like etcd's own clients):
 * a real etcd that requires client certificates signed by a test CA; `--etcd-ca`, `--etcd-cert` and `--etcd-key`
 * get the server elected, and without the client certificate it exits 1 naming the store.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { etcdMissing } from '../support/etcd.js';
import { closedPort } from '../support/ports.js';
import { until } from '../support/until.js';

const missing = etcdMissing();
const inCI = process.env.CI === 'true';
const describeEtcd = missing && !inCI ? describe.skip : describe;
if (missing && !inCI) console.warn(`etcd-tls.test.ts skipped: ${missing} (in CI these tests run)`);

const dir = mkdtempSync(join(tmpdir(), 'berth-etcd-tls-'));
const at = (f: string) => join(dir, f);
let etcd: ChildProcess | undefined;
let endpoint = '';

/** A key and a certificate signed by the test CA; `ext` the X.509 v3 extensions. */
function signed(name: string, ext: string): void {
  const ssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    at(`${name}.key`),
    '-out',
    at(`${name}.csr`),
    '-subj',
    `/CN=${name}`,
  ]);
  writeFileSync(at(`${name}.ext`), ext);
  ssl([
    'x509',
    '-req',
    '-in',
    at(`${name}.csr`),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-out',
    at(`${name}.pem`),
    '-days',
    '1',
    '-extfile',
    at(`${name}.ext`),
  ]);
}

beforeAll(async () => {
  if (missing && !inCI) return;
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=berth-test-ca',
    ],
    { stdio: 'ignore' },
  );
  signed('etcd', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('berth', 'extendedKeyUsage=clientAuth\n');
  const [port, peer] = [await closedPort(), await closedPort()];
  endpoint = `127.0.0.1:${port}`;
  etcd = spawn(
    'etcd',
    [
      `--name=t`,
      `--data-dir=${at('data')}`,
      `--listen-client-urls=https://${endpoint}`,
      `--advertise-client-urls=https://${endpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=t=http://127.0.0.1:${peer}`,
      `--cert-file=${at('etcd.pem')}`,
      `--key-file=${at('etcd.key')}`,
      `--trusted-ca-file=${at('ca.pem')}`,
      '--client-cert-auth',
    ],
    { stdio: 'ignore' },
  );
  await until(
    () => {
      try {
        execFileSync(
          'etcdctl',
          [
            `--endpoints=https://${endpoint}`,
            `--cacert=${at('ca.pem')}`,
            `--cert=${at('berth.pem')}`,
            `--key=${at('berth.key')}`,
            'endpoint',
            'health',
          ],
          { stdio: 'ignore', env: { ...process.env, ETCDCTL_API: '3' } },
        );
        return true;
      } catch {
        return false;
      }
    },
    20_000,
    200,
  );
}, 40_000);

afterAll(async () => {
  if (etcd && etcd.exitCode === null) {
    const gone = new Promise((r) => etcd?.once('exit', r));
    etcd.kill('SIGKILL');
    await gone;
  }
  rmSync(dir, { recursive: true, force: true });
});

describeEtcd('berth serve --store etcd over TLS', () => {
  it('with --etcd-ca, --etcd-cert and --etcd-key it is elected; without the client certificate it exits 1', {
    timeout: 40_000,
  }, async () => {
    const serve = (tls: string[]) =>
      spawnBerth([
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--store',
        `etcd://${endpoint}`,
        '--cluster',
        'tls',
        '--state-dir',
        at('state'),
        '--cpus',
        '0',
        '--gpus',
        '',
        ...tls,
      ]);
    const ok = serve(['--etcd-ca', at('ca.pem'), '--etcd-cert', at('berth.pem'), '--etcd-key', at('berth.key')]);
    const done = finished(ok);
    try {
      expect(await waitForLine(ok, /"msg":"berth serving"/)).toMatch(/"epoch":[1-9]/);
    } finally {
      ok.kill('SIGTERM');
    }
    expect((await done).code).toBe(0);
    const refused = await finished(serve(['--etcd-ca', at('ca.pem')]));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`--store etcd://${endpoint}: cannot campaign in etcd`);
  });
});
