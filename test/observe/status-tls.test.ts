/**
 * Issue 13 item 7: `berth status` and `dispatch --server` reach a mutual-TLS server like the worker
 * does (--tls-ca, --tls-cert, --tls-key); `status --watch` redraws every second under a clock
 * line; a claim waiting for a label says so. Certificates are made by openssl for the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { recordingJob, scratch, started, withLogDir, type Scratch } from '../dispatch/support.js';
import { claim, fakeWorker } from '../support/claims.js';
import { finished, runBerth, spawnBerth } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';

let dir = '';
const f = (n: string) => join(dir, n);
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-status-tls-'));
  const script = `set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=berth-test-ca 2>/dev/null
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $who.pem -days 1 \
-extfile $who.ext 2>/dev/null
done`;
  execFileSync('bash', ['-c', script], { cwd: dir });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('status and dispatch over mutual TLS', () => {
  let t: TestServer | undefined;
  let s: Scratch | undefined;
  afterEach(async () => {
    s?.cleanup();
    s = undefined;
    await t?.close();
    t = undefined;
  });

  const mtls = () => ['--tls-ca', f('ca.pem'), '--tls-cert', f('client.pem'), '--tls-key', f('client.key')];

  it(
    'berth status reads the books of a mutual-TLS server with ' + '--tls-ca/--tls-cert/--tls-key; plaintext cannot',
    async () => {
      t = await startServer({
        cpus: 3,
        flags: { tlsCert: f('server.pem'), tlsKey: f('server.key'), tlsCa: f('ca.pem') },
      });
      const ok = await runBerth(['status', '--server', t.address, ...mtls()]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout.split('\n').find((l) => l.startsWith('engine'))).toMatch(/engine\s+engine\s+-\s+3\/3/);
      const env = await runBerth(['status', '--server', t.address], {
        BERTH_TLS_CA: f('ca.pem'),
        BERTH_TLS_CERT: f('client.pem'),
        BERTH_TLS_KEY: f('client.key'),
      });
      expect(env.code, env.stderr).toBe(0);
      const plain = await runBerth(['status', '--server', t.address]);
      expect(plain.code).toBe(1);
      expect(plain.stderr).toContain(`cannot get status from ${t.address}`);
      const half = await runBerth([
        'status',
        '--server',
        t.address,
        '--tls-ca',
        f('ca.pem'),
        '--tls-cert',
        f('client.pem'),
      ]);
      expect(half.code).toBe(2);
      expect(half.stderr).toMatch(/--tls-cert and --tls-key must be given together/);
    },
  );

  it('dispatch --server runs a job through a mutual-TLS server', async () => {
    t = await startServer({
      cpus: 2,
      flags: { tlsCert: f('server.pem'), tlsKey: f('server.key'), tlsCa: f('ca.pem') },
    });
    s = scratch();
    const file = s.batch([recordingJob(s.dir, 'secure', 0, 0)]);
    const r = await runBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address, ...mtls()])]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(started(s.dir, 'secure')).toBe(true);
  });
});

describe('berth status --watch', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('redraws every second under a clock line, and a claim waiting for a label says so', async () => {
    t = await startServer({ cpus: 1 });
    const w = fakeWorker(t.worker, 'gpu1', { cpus: 1, gpuIds: [0] }, ['gpu']);
    await w.welcomed;
    const held = claim(t.placement, { cpus: 1, label: 'gpu', policy: Policy.POLICY_REQUIRE, node: 'on.gpu' });
    await held.granted;
    const waiting = claim(t.placement, { cpus: 1, label: 'gpu', policy: Policy.POLICY_REQUIRE, node: 'wants.gpu' });
    await waiting.queued;
    const child = spawnBerth(['status', '--server', t.address, '--watch']);
    const done = finished(child);
    let out = '';
    const clocks = () =>
      [...out.matchAll(/^berth at \S+ · (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC · every 1 s, Ctrl-C stops$/gm)].map(
        (m) => m[1],
      );
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (new Set(clocks()).size >= 2) resolve();
      });
      child.on('exit', () => reject(new Error(`status --watch exited early:\n${out}`)));
    });
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(0);
    const [first, second] = [...new Set(clocks())];
    expect(Date.parse(`${second}Z`) - Date.parse(`${first}Z`)).toBeGreaterThanOrEqual(1000);
    expect(out).toMatch(/wants\.gpu\s+-\s+1 cpu\(s\) with label gpu/);
    waiting.call.cancel();
    await held.release();
    w.close();
  });
});
