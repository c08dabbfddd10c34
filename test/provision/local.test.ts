import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { ProvisionedState, type SatisfiableResponse, Verdict } from '../../generated/ts/berth/v1/placement.js';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { ask, claim, watch } from '../support/claims.js';
import { runBerth, waitForLine } from '../support/cli.js';
import { configFile, queuedMatching, serveCli, tempDir, removeTempDirs } from '../support/provisioning.js';
import { processAlive } from '../support/process-groups.js';
import { closedPort } from '../support/ports.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

afterAll(removeTempDirs);

const pool = (idle = 1, extra = '') => `
provisioners:
  - name: local
    kind: local
    shapes: [{ cpus: 2, gpus: 0, labels: [pool] }]
    max_machines: 1
    idle_timeout: ${idle}
    start_timeout: 60
${extra}`;

/** A server whose engine has 1 cpu and a local provisioner of 2-cpu `pool` workers. */
async function serverWithPool(yaml = pool(), stateDir = tempDir()): Promise<TestServer> {
  return startServer({ cpus: 1, flags: { config: configFile(tempDir(), yaml), stateDir } });
}

function satisfiable(client: PlacementServiceClient, a: Ask): Promise<string> {
  return new Promise((resolve, reject) =>
    client.satisfiable({ ask: a, group: undefined }, (err, res) => (err ? reject(err) : resolve(res!.waitFor))),
  );
}

const wantsPool = { cpus: 2, label: 'pool', policy: Policy.POLICY_REQUIRE, node: 'big' };

describe('local provisioner: berth worker child processes (issue 12, SPEC P10, V1–V4)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a claim only a pool shape holds starts a worker process, is granted on it, ' +
    'and the idle worker is stopped after release', async () => {
    const stateDir = tempDir();
    t = await serverWithPool(pool(), stateDir);
    const events = watch(t.placement);
    await events.ready;
    expect(await satisfiable(t.placement, ask(wantsPool))).toBe('2 cpu(s)'); // what it would wait for (P10)
    const c = claim(t.placement, wantsPool);
    const q = await queuedMatching(c, /waiting for local: /);
    expect(q.detail).toMatch(/^2 cpu\(s\); waiting for local: (starting a worker process|worker process \d+)/);
    const g = await c.granted;
    expect(g.machine).toBe('local-1');
    expect(g.clamped).toBe(false);
    expect(g.allocation?.cpus).toBe(2);
    // its log and its records (SPEC R5) are in the server's --state-dir
    expect(readdirSync(stateDir).sort()).toEqual(expect.arrayContaining(['local-1.log', 'worker-local-1']));
    const prov = (await snapshot(t.placement)).provisioners[0];
    expect(prov.machines).toMatchObject([{ name: 'local-1', state: ProvisionedState.PROVISIONED_STATE_RUNNING }]);
    const pid = Number(prov.machines[0].engineId);
    expect(processAlive(pid)).toBe(true);
    const status = await runBerth(['status', '--server', t.address]);
    expect(status.stdout).toContain(
      'provisioner local (local): 1 machine(s): 1 running, max 1; shapes: 2 cpu, 0 gpu [pool]',
    );
    expect(status.stdout).toMatch(new RegExp(`^  local-1\\s+running\\s+${pid}  worker process ${pid}`, 'm'));
    const detached = events.next((e) => e.kind === 'worker_detached' && e.machine === 'local-1');
    const stopping = events.next((e) => e.kind === 'machine_stopping');
    await c.release();
    expect((await stopping).detail).toMatch(/local: local-1 \(worker process \d+\) given back: idle for [12] s/);
    await detached;
    for (let i = 0; i < 100 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(processAlive(pid)).toBe(false);
    events.cancel();
  }, 30_000);

  it('a worker process killed outside berth before it attached is noticed: ' +
    'an event says so and a new one is started', async () => {
    t = await serverWithPool();
    const events = watch(t.placement);
    await events.ready;
    const started = events.next((e) => e.kind === 'machine_started');
    const c = claim(t.placement, wantsPool);
    await started;
    const first = (await snapshot(t.placement)).provisioners[0].machines[0];
    const failed = events.next((e) => e.kind === 'machine_start_failed');
    process.kill(-Number(first.engineId), 'SIGKILL');
    expect((await failed).detail).toContain(
      `local: local-1 (worker process ${first.engineId}) is gone: worker process ${first.engineId} exited on SIGKILL`,
    );
    const g = await c.granted;
    expect(g.machine).toBe('local-2');
    await c.release();
    events.cancel();
  }, 30_000);

  it('a start that fails reaches the waiting claim as a Queued reason and an event with the cause', async () => {
    const stateDir = tempDir();
    // each worker log path is taken by a directory: every start (retries included) fails to open it (EISDIR)
    for (const n of [1, 2, 3, 4]) mkdirSync(join(stateDir, `local-${n}.log`));
    t = await serverWithPool(pool(), stateDir);
    const events = watch(t.placement);
    await events.ready;
    const failed = events.next((e) => e.kind === 'machine_start_failed');
    const c = claim(t.placement, wantsPool);
    expect((await failed).detail).toMatch(
      /^local: cannot open the worker log .*\/local-1\.log: EISDIR.*; retrying in 1 s$/,
    );
    const q = await queuedMatching(c, /start failed/);
    expect(q.detail).toMatch(
      /^2 cpu\(s\); waiting for local: start failed: cannot open the worker log .*EISDIR.* \(retrying after 1 s\)$/,
    );
    expect((await snapshot(t.placement)).provisioners[0].lastError).toMatch(/EISDIR/);
    c.call.cancel();
    await c.ended;
    events.cancel();
  }, 30_000);

  it('an ask bigger than every shape with its label fails naming those shapes, not "no provisioner"', async () => {
    t = await serverWithPool(pool(1, 'reconnect_grace: 0')); // no grace: nothing labelled pool is coming back
    // Satisfiable answers a verdict (issue 23 item 7); the claim fails naming the shapes
    const v = await new Promise<SatisfiableResponse>((resolve, reject) =>
      t!.placement.satisfiable({ ask: ask({ ...wantsPool, cpus: 3 }), group: undefined }, (e, r) =>
        e ? reject(e) : resolve(r!),
      ),
    );
    expect(v).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'label' });
    const c = claim(t.placement, { ...wantsPool, cpus: 3 });
    const err = await c.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toBe(
      "no machine carries label 'pool' and no provisioner can start one that holds 3 cpu(s) " +
        '(with that label they start local: 2 cpu(s) [pool])',
    );
    expect(await satisfiable(t.placement, ask(wantsPool))).toBe('2 cpu(s)'); // the shape's own size is covered
  });

  it('a worker that cannot reach berth: the failed start says why, from the last line of its log', async () => {
    const yaml = pool(1).replace('start_timeout: 60', 'start_timeout: 5'); // time for the worker to log a try
    const advertise = `127.0.0.1:${await closedPort()}`; // the workers dial a port nothing listens on
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), yaml), stateDir: tempDir(), advertise } });
    const events = watch(t.placement);
    await events.ready;
    const failed = events.next((e) => e.kind === 'machine_start_failed');
    const c = claim(t.placement, wantsPool);
    const detail = (await failed).detail;
    expect(detail).toMatch(/^local: local-1 \(worker process \d+.*\) did not attach within 5 s; its log \(/);
    expect(detail).toMatch(/local-1\.log\) ends: cannot attach; retrying: .*ECONNREFUSED/);
    expect((await snapshot(t.placement)).provisioners[0].lastError).toMatch(/ECONNREFUSED/);
    c.call.cancel();
    await c.ended;
    events.cancel();
  }, 30_000);
});

describe('berth serve --on-stop drain with a local provisioner, stopped with SIGTERM (issue 12, SPEC R3)', () => {
  it('leaves no worker process behind', async () => {
    const dir = tempDir();
    const s = await serveCli(configFile(dir, pool(60)), dir, ['--on-stop', 'drain']);
    const c = claim(s.placement, wantsPool);
    await c.granted;
    const pid = Number((await snapshot(s.placement)).provisioners[0].machines[0].engineId);
    expect(processAlive(pid)).toBe(true);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    expect(processAlive(pid)).toBe(false);
    await c.ended;
    s.placement.close();
  }, 60_000);

  it('a second signal during the drain kills the started workers too, without waiting', async () => {
    const dir = tempDir();
    // the held claim keeps it draining
    const s = await serveCli(configFile(dir, pool(60)), dir, ['--grace', '60', '--on-stop', 'drain']);
    const c = claim(s.placement, wantsPool);
    await c.granted;
    const pid = Number((await snapshot(s.placement)).provisioners[0].machines[0].engineId);
    const draining = waitForLine(s.child, /berth draining/);
    s.child.kill('SIGTERM');
    await draining;
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(130);
    await until(() => !processAlive(pid), 5000); // SIGKILLed: gone once init reaps it
    await c.ended;
    s.placement.close();
  }, 60_000);
});

describe('one server per state directory (issue 12: the ledgers there are adopted after a crash)', () => {
  it('a second berth serve on the same state directory is refused, naming the first; once that one is killed, ' +
    'the next server takes the directory over', async () => {
    const dir = tempDir();
    const config = configFile(dir, pool(60));
    const first = await serveCli(config, dir);
    const second = await runBerth(['serve', '--config', config, '--listen', '127.0.0.1:0', '--state-dir', dir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(
      new RegExp(
        `state directory ${dir} belongs to another berth serve ` +
          `\\(pid ${first.child.pid}, serving 127\\.0\\.0\\.1:\\d+\\)`,
      ),
    );
    expect(second.stderr).toContain('give this server its own --state-dir');
    expect((await snapshot(first.placement)).provisioners[0].name).toBe('local'); // the first serves on
    first.child.kill('SIGKILL'); // a crash: its lock stays behind
    await first.exited;
    first.placement.close();
    const next = await serveCli(config, dir);
    next.child.kill('SIGTERM');
    expect((await next.exited).code).toBe(0);
    next.placement.close();
  }, 60_000);
});
