/**
 * `berth serve --store etcd://…` (issue 20, SPEC S7) through real server processes and a real etcd: one of two
 * servers leads (snapshot, `berth status` and metrics say so), the standby answers every berth.v1 RPC UNAVAILABLE
 * naming the leader (a `leader` trailer, health NOT_SERVING for the placement service); SIGTERM hands over at once;
 * a leader cut off from etcd stops acting and exits 3, and nothing it writes after lands. Takeover: takeover.test.ts.
 */
import { credentials, status, type ServiceError } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { WorkerServiceClient } from '../../generated/ts/berth/v1/worker.js';
import { runBerth } from '../support/cli.js';
import { closedPort } from '../support/ports.js';
import { claim } from '../support/claims.js';
import { etcdSuite, member, serving, type Member } from '../support/cluster.js';
import { healthClient } from '../support/grpc-std.js';
import { LinkProxy } from '../support/link-proxy.js';
import { run, runRequest } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';

const { describeEtcd, etcd, cleanup, clusterName, pair } = etcdSuite('serve-cluster.test.ts');

/** The health status of `service` at `address`. */
function health(address: string, service: string): Promise<string> {
  const h = healthClient(address);
  return new Promise<string>((resolve, reject) =>
    h.check({ service }, (err, res) => (h.close(), err ? reject(err) : resolve(res!.status))),
  );
}

/** The error (with its trailers) a unary call ends with. */
function failedSnapshot(m: Member): Promise<ServiceError> {
  return new Promise((resolve, reject) =>
    m.client.getSnapshot({}, (err) => (err ? resolve(err) : reject(new Error('served')))),
  );
}

describeEtcd('berth serve --store etcd (SPEC S7)', () => {
  it('one of two servers leads; the standby answers every berth.v1 RPC UNAVAILABLE naming the leader with a leader ' +
    "trailer, and its health is '' SERVING but berth.v1.PlacementService NOT_SERVING", async () => {
    const metricsAt = `127.0.0.1:${await closedPort()}`;
    const { name, a, b } = await pair([], etcd().endpoint, ['--metrics-listen', metricsAt]);
    expect(a.log()).toContain(`"msg":"elected leader of cluster ${name}`);
    expect(b.log()).toContain('"msg":"berth standing by"');
    const snap = await snapshot(a.client);
    expect(snap.machines.map((m) => m.name)).toEqual(['engine']);
    expect(snap.cluster).toMatchObject({ name, role: 'leader', leader: a.address, standbys: [b.address] });
    expect(snap.cluster?.epoch).toBeGreaterThan(0);
    const shown = await runBerth(['status', '--server', a.address]);
    expect(shown.stdout).toContain(
      `cluster ${name}: leader ${a.address}, epoch ${snap.cluster?.epoch}; standbys: ${b.address}`,
    );
    await claim(a.client, { cpus: 1 }).release(); // a journal write to time
    const metrics = await (await fetch(`http://${metricsAt}/metrics`)).text();
    expect(metrics).toMatch(/^berth_ha_leader 1$/m);
    expect(metrics).toMatch(new RegExp(`^berth_ha_epoch ${snap.cluster?.epoch}$`, 'm'));
    expect(metrics).toMatch(/^berth_ha_elections_total 1$/m);
    expect(metrics).toMatch(/^berth_store_write_seconds_count\{store="etcd"\} [1-9]/m);
    expect(await health(a.address, 'berth.v1.PlacementService')).toBe('SERVING');
    expect(await health(b.address, '')).toBe('SERVING');
    expect(await health(b.address, 'berth.v1.PlacementService')).toBe('NOT_SERVING');

    const err = await failedSnapshot(b);
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.details).toBe(`standby of cluster ${name}: the leader is at ${a.address}`);
    expect(err.metadata.get('leader')).toEqual([a.address]);
    const c = claim(b.client, { cpus: 1 });
    expect(await c.ended).toMatchObject({ code: status.UNAVAILABLE, details: expect.stringContaining(a.address) });
    const r = await run(b.client, runRequest({ argv: ['true'] })).done;
    expect(r.error?.code).toBe(status.UNAVAILABLE);
    const w = new WorkerServiceClient(b.address, credentials.createInsecure());
    cleanup.push(() => w.close());
    const stream = w.workerStream();
    const ended = new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    stream.write({ kind: { $case: 'hello', value: { name: 'x' } } } as never);
    expect((await ended).code).toBe(status.UNAVAILABLE);
  }, 30_000);

  it('SIGTERM on the leader hands over at once: the standby serves, the leader exits 0', async () => {
    const { a, b } = await pair();
    const at = Date.now();
    a.child.kill('SIGTERM');
    await serving(b);
    const ms = Date.now() - at;
    expect(await a.exited).toBe(0);
    expect((await snapshot(b.client)).machines.map((m) => m.name)).toEqual(['engine']);
    console.log(`hand-over after SIGTERM: ${ms} ms`);
  }, 30_000);

  it('a leader cut off from etcd stops acting: it exits 3 saying it was deposed, the standby takes over, and a ' +
    'claim asked of the old leader after the cut was never granted nor written', async () => {
    const name = clusterName();
    const proxy = new LinkProxy(etcd().endpoint);
    cleanup.push(() => proxy.close());
    const via = await proxy.start();
    const a = await member(via, name, cleanup);
    await serving(a);
    const b = await member(etcd().endpoint, name, cleanup);
    const before = claim(a.client, { cpus: 1 });
    const kept = await before.granted;
    proxy.cut();
    const late = claim(a.client, { cpus: 1 });
    expect(await late.ended).toMatchObject({ code: status.UNAVAILABLE });
    expect(late.responses.filter((r) => r.kind?.$case === 'granted')).toEqual([]);
    const code = await a.exited;
    expect(a.log()).toMatch(/"event":"cluster_deposed".*"msg":"deposed: no keep-alive succeeded/);
    expect(code).toBe(3);
    expect(a.log()).toMatch(/"event":"cluster_deposed".*"msg":"deposed: no keep-alive succeeded/);
    await serving(b);
    const held = (await snapshot(b.client)).held.map((h) => h.claimId);
    expect(held).toEqual([kept.claimId]); // the claim granted before the cut, and nothing after
    const keys = await etcd().client.getAll().prefix(`/berth/${name}/journal/claim`).keys();
    expect(keys).toHaveLength(1);
  }, 30_000);
});
