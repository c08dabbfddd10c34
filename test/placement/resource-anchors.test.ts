/**
 * The anchor bugs of issue 23 that concern memory, pools and custom resources, through a real server over gRPC
 * (workers attached by Hello): simultaneous memory asks never all pass a stale free-memory check
 * (shakenfist#3636: 100 concurrent 16 GB asks on a 64 GB machine grant exactly 4); a memory-heavy and a core-heavy
 * ask each land on the machine that suits it; a license pool under reservations is never oversubscribed (Slurm
 * 22.05); the provisioner starts one machine per shape's capacity of a custom resource, not one per waiter
 * (ray#38189). The server's books are checked after every event (startServer's invariantErrors).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { UNIT } from '../../src/resources/quantity.js';
import { claim, type ClaimHandle, fakeWorker, type FakeWorker } from '../support/claims.js';
import { testProvisioner } from '../support/provisioner.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

let t: TestServer | undefined;
const open: (ClaimHandle | FakeWorker)[] = [];
afterEach(async () => {
  for (const x of open.splice(0)) 'release' in x ? x.call.cancel() : x.close();
  expect(t?.invariantErrors ?? []).toEqual([]);
  await t?.close();
  t = undefined;
});
const keep = <T extends ClaimHandle | FakeWorker>(x: T): T => {
  open.push(x);
  return x;
};
/** Licenses held by the claims of a snapshot. */
const held = (s: GetSnapshotResponse, pool: string) =>
  s.held.reduce((n, h) => n + (h.allocation?.resources?.[pool] ?? 0), 0);

describe('issue 23 anchors through the real server', () => {
  it('100 concurrent 16 GB asks on a 64 GB machine grant exactly 4 (shakenfist#3636); a release grants one more', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'box', { cpus: 256, ramMb: 65_536 })).welcomed;
    const claims = Array.from({ length: 100 }, (_, i) =>
      keep(claim(t!.placement, { cpus: 1, ramMb: 16_384, node: `n${i}` })),
    );
    const granted: ClaimHandle[] = [];
    for (const c of claims)
      c.granted.then(
        () => granted.push(c),
        () => {},
      );
    await until(() => claims.filter((c) => c.responses.some((r) => r.kind?.$case === 'queued')).length === 96);
    await until(() => granted.length === 4);
    let s = await snapshot(t.placement);
    expect(s.held.length).toBe(4);
    expect(s.waiting.length).toBe(96);
    expect(s.waiting[0].reason?.detail).toContain('waiting for 16384 MB ram');
    await granted[0].release();
    await until(() => granted.length === 5);
    s = await snapshot(t.placement);
    expect(s.held.length).toBe(4);
    expect(s.waiting.length).toBe(95);
    expect(s.machines.find((m) => m.name === 'box')?.free?.ramMb).toBe(0);
  });

  it('a memory-heavy ask goes to the memory-rich machine and a core-heavy one to the core-rich machine', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'mem', { cpus: 8, ramMb: 262_144 })).welcomed;
    await keep(fakeWorker(t.worker, 'cores', { cpus: 64, ramMb: 16_384 })).welcomed;
    // Small asks first: they fill where they fit tightest and leave room on both.
    for (let i = 0; i < 3; i++) await keep(claim(t.placement, { cpus: 1, ramMb: 1024 })).granted;
    const heavyMem = await keep(claim(t.placement, { cpus: 2, ramMb: 196_608 })).granted;
    const heavyCores = await keep(claim(t.placement, { cpus: 48, ramMb: 4096 })).granted;
    expect([heavyMem.machine, heavyCores.machine]).toEqual(['mem', 'cores']);
    const coresNoRam = await keep(claim(t.placement, { cpus: 12 })).granted;
    expect(coresNoRam.machine).toBe('cores');
  });

  it('a license pool under reservations is never oversubscribed (Slurm 22.05)', async () => {
    const LIC = 'license/matlab';
    t = await startServer({ cpus: 0, flags: { pools: `${LIC}=2` } });
    await keep(fakeWorker(t.worker, 'box', { cpus: 8 })).welcomed;
    await keep(fakeWorker(t.worker, 'side', { cpus: 2 })).welcomed; // too small for B
    const a = keep(claim(t.placement, { cpus: 4, label: 'x', node: 'a' })); // prefer: on box, the best fit
    await a.granted;
    // B, older, waits for 8 cores with a license: one license is held back for it.
    const b = keep(claim(t.placement, { cpus: 8, resources: { [LIC]: 1 }, node: 'b' }));
    await b.queued;
    const cs = Array.from({ length: 5 }, (_, i) =>
      keep(claim(t!.placement, { cpus: 1, resources: { [LIC]: 1 }, node: `c${i}` })),
    );
    await cs[0].granted;
    for (const c of cs.slice(1)) expect((await c.queued).detail).toContain(`waiting for ${LIC}`);
    let s = await snapshot(t.placement);
    expect(held(s, LIC)).toBe(1);
    expect(s.pools.find((p) => p.name === LIC)).toMatchObject({ total: 2, free: 1 });
    await a.release(); // B gets its cores and the license held back for it
    expect((await b.granted).allocation?.resources).toEqual({ [LIC]: 1 });
    s = await snapshot(t.placement);
    expect(held(s, LIC)).toBe(2);
    expect(s.waiting.map((w) => w.node)).toEqual(['c1', 'c2', 'c3', 'c4']);
    await cs[0].release();
    await cs[1].granted;
    s = await snapshot(t.placement);
    expect(held(s, LIC)).toBe(2);
    expect(s.pools.find((p) => p.name === LIC)?.free).toBe(0);
  });

  it('the provisioner starts one machine per shape capacity of a custom resource, not one per waiter (ray#38189)', async () => {
    const shape = { cpus: 8, gpus: 0, labels: [], resources: { trainer: 4 * UNIT } };
    const prov = testProvisioner(shape);
    t = await startServer({ cpus: 1, provisioning: prov.make });
    const waiters = Array.from({ length: 8 }, (_, i) =>
      keep(claim(t!.placement, { cpus: 1, resources: { trainer: 1 }, node: `t${i}` })),
    );
    await Promise.all(waiters.map((w) => w.queued));
    await until(() => prov.backend.requests.length === 2);
    for (const name of ['prov-1', 'prov-2'])
      await keep(fakeWorker(t.worker, name, { cpus: 8, resources: { trainer: 4 } })).welcomed;
    const grants = await Promise.all(waiters.map((w) => w.granted));
    expect(grants.filter((g) => g.machine === 'prov-1').length).toBe(4);
    expect(grants.filter((g) => g.machine === 'prov-2').length).toBe(4);
    expect(prov.backend.requests).toEqual([shape, shape]);
  });
});
