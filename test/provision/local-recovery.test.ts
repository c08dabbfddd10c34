/**
 * The local provisioner when things go wrong outside berth (issue 12, SPEC V3–V4): a server killed
 * with its workers left running, a worker killed after it attached and ran calls.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim, watch } from '../support/claims.js';
import { configFile, serveCli, tempDir, removeTempDirs } from '../support/provisioning.js';
import { run, runRequest } from '../support/run-client.js';
import { processAlive } from '../support/process-groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

afterAll(removeTempDirs);

/** A local provisioner of one 2-cpu `pool` worker. Units: seconds. */
const pool = (o: { idle?: number; start?: number } = {}) => `
provisioners:
  - name: local
    kind: local
    shapes: [{ cpus: 2, gpus: 0, labels: [pool] }]
    max_machines: 1
    idle_timeout: ${o.idle ?? 60}
    start_timeout: ${o.start ?? 60}
`;

const wantsPool = { cpus: 2, label: 'pool', policy: Policy.POLICY_REQUIRE, node: 'big' };

describe('local provisioner: recovering from what happens outside berth (issue 12, SPEC V3–V4)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a worker a killed server left, dialling the old address, is stopped after start_timeout ' +
    'and a new worker serves the waiting claim', async () => {
    const dir = tempDir();
    const s1 = await serveCli(configFile(dir, pool()), dir);
    const c1 = claim(s1.placement, wantsPool);
    expect((await c1.granted).machine).toBe('local-1');
    const orphan = Number((await snapshot(s1.placement)).provisioners[0].machines[0].engineId);
    s1.child.kill('SIGKILL');
    await s1.exited;
    await c1.ended;
    s1.placement.close();
    expect(processAlive(orphan)).toBe(true); // left behind, still dialling the dead server's port
    // the next server on the same state dir listens on another port: the orphan never attaches to it
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), pool({ start: 3 })), stateDir: dir } });
    const events = watch(t.placement);
    await events.ready;
    const stopping = events.next((e) => e.kind === 'machine_stopping');
    const c = claim(t.placement, wantsPool);
    expect((await stopping).detail).toMatch(
      new RegExp(
        `^local: local-1 \\(worker process ${orphan}\\), left by a previous server, did not attach within 3 s$`,
      ),
    );
    const g = await c.granted;
    expect(g.machine).toMatch(/^local-\d+$/);
    const machines = (await snapshot(t.placement)).provisioners[0].machines;
    expect(machines.find((m) => m.name === g.machine)?.engineId).not.toBe(String(orphan));
    await c.release();
    events.cancel();
  }, 60_000);

  it('a worker that attached and ran a call, then was killed outside berth, is a lost machine: ' +
    'not a failed start, no last error, no backoff, and the next claim gets a new worker', async () => {
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), pool()), stateDir: tempDir() } });
    const events = watch(t.placement);
    await events.ready;
    const c = claim(t.placement, wantsPool);
    const g = await c.granted;
    expect(g.machine).toBe('local-1');
    const done = await run(t.placement, runRequest({ claimId: g.claimId, argv: ['true'] })).done;
    expect(done.error).toBeNull();
    const pid = (await snapshot(t.placement)).provisioners[0].machines[0].engineId;
    const noticed = events.next((e) => e.kind === 'machine_lost' || e.kind === 'machine_start_failed');
    process.kill(-Number(pid), 'SIGKILL');
    const e = await noticed;
    expect(e.kind).toBe('machine_lost');
    expect(e.detail).toMatch(
      new RegExp(`^local: local-1 \\(worker process ${pid}\\) is gone: worker process ${pid} exited on SIGKILL`),
    );
    expect(e.detail).toMatch(/; re-planning$/);
    expect(e.detail).not.toContain('never attached');
    expect(e.detail.split('local-1.log').length - 1).toBeLessThanOrEqual(1); // the log's path said once at most
    await c.ended;
    expect((await snapshot(t.placement)).provisioners[0].lastError).toBe('');
    const next = claim(t.placement, wantsPool);
    const q = await next.queued;
    expect(q.detail).not.toMatch(/start failed/);
    expect((await next.granted).machine).toBe('local-2');
    await next.release();
    events.cancel();
  }, 60_000);
});
