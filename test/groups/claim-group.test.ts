/**
 * ClaimGroup through the real server (docs/rules.md G1–G5): real gRPC, the generated stubs, workers attached by
 * Hello. Interleaved STRICT_PACK gangs both granted; gangs of 6 on 8 GPUs one after the other with no snapshot or
 * event showing part of a gang held; the 30/50-core search in every member order; an infeasible group failing at
 * once while a feasible one behind it is granted; every ending giving every member back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { fakeWorker, watch, type FakeWorker } from '../support/claims.js';
import { claimGroup, GroupStrategy, OnMemberLost, type GroupHandle } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';

let t: TestServer | undefined;
const open: (GroupHandle | FakeWorker | { cancel(): void })[] = [];
afterEach(async () => {
  for (const x of open.splice(0)) 'release' in x ? x.call.cancel() : 'close' in x ? x.close() : x.cancel();
  await t?.close();
  t = undefined;
});
const keep = <T extends GroupHandle | FakeWorker | { cancel(): void }>(x: T): T => {
  open.push(x);
  return x;
};
const gpus = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Groups in a snapshot holding some but not all of their members. */
function partial(s: GetSnapshotResponse): string[] {
  return s.groups
    .filter((g) => g.members.some((m) => m.machine) && g.members.some((m) => !m.machine))
    .map((g) => g.groupId);
}

describe('ClaimGroup through the real server', () => {
  it('two interleaved STRICT_PACK gangs of 4 × 1 GPU on 2 × 4 GPUs are both granted, one machine each', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'a', { cpus: 8, gpuIds: gpus(4) })).welcomed;
    await keep(fakeWorker(t.worker, 'b', { cpus: 8, gpuIds: gpus(4) })).welcomed;
    const four = Array.from({ length: 4 }, () => ({ cpus: 1, gpus: 1 }));
    const x = keep(claimGroup(t.placement, four, GroupStrategy.GROUP_STRATEGY_STRICT_PACK));
    const y = keep(claimGroup(t.placement, four, GroupStrategy.GROUP_STRATEGY_STRICT_PACK));
    const [gx, gy] = await Promise.all([x.granted, y.granted]);
    const on = (g: typeof gx) => [...new Set(g.members.map((m) => m.machine))];
    expect(on(gx)).toHaveLength(1);
    expect(on(gy)).toHaveLength(1);
    expect(on(gx)[0]).not.toBe(on(gy)[0]);
    expect(gx.members.flatMap((m) => m.allocation?.gpuIds).sort()).toEqual([0, 1, 2, 3]);
    expect(gx.members[0].allocation?.env.CUDA_VISIBLE_DEVICES).toMatch(/^[0-3]$/);
    const s = await snapshot(t.placement);
    expect(s.groups.map((g) => g.state)).toEqual(['held', 'held']);
    expect(s.held).toEqual([]); // members are listed under their group, not as claims
  });

  it('two gangs of 6 on 8 GPUs run one after the other; no snapshot or event shows part of a gang', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'w', { cpus: 16, gpuIds: gpus(8) })).welcomed;
    const w = keep(watch(t.placement));
    await w.ready;
    const six = Array.from({ length: 6 }, () => ({ cpus: 1, gpus: 1 }));
    const seen: string[] = [];
    for (let round = 0; round < 5; round++) {
      const a = keep(claimGroup(t.placement, six));
      const b = keep(claimGroup(t.placement, six));
      const first = await Promise.race([a.granted.then(() => a), b.granted.then(() => b)]);
      const second = first === a ? b : a;
      const q = await second.queued;
      expect(q.detail).toContain('gpu');
      const s = await snapshot(t.placement);
      seen.push(...partial(s));
      expect(machine(s, 'w').free?.gpus).toBe(2);
      expect(s.groups.map((g) => g.state).sort()).toEqual(['held', 'waiting']);
      await first.release();
      const g2 = await second.granted;
      expect(g2.members).toHaveLength(6);
      seen.push(...partial(await snapshot(t.placement)));
      await second.release();
    }
    expect(seen).toEqual([]);
    const kinds = w.seen.map((e) => e.kind).filter((k) => k.startsWith('group_') || k.startsWith('node_'));
    expect(kinds.filter((k) => k === 'group_placed')).toHaveLength(10);
    expect(kinds.filter((k) => k.startsWith('node_'))).toEqual([]); // no member placed on its own
    expect(machine(await snapshot(t.placement), 'w').free?.gpus).toBe(8);
  });

  it('members of 30 and 50 cores on machines with 53 and 31 free are granted in every member order', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'big', { cpus: 53 })).welcomed;
    await keep(fakeWorker(t.worker, 'small', { cpus: 31 })).welcomed;
    for (const order of [
      [30, 50],
      [50, 30],
    ]) {
      for (const strategy of [GroupStrategy.GROUP_STRATEGY_PACK, GroupStrategy.GROUP_STRATEGY_SPREAD]) {
        const g = keep(
          claimGroup(
            t.placement,
            order.map((cpus) => ({ cpus })),
            strategy,
          ),
        );
        const granted = await g.granted;
        const where = Object.fromEntries(granted.members.map((m) => [m.allocation?.cpus, m.machine]));
        expect(where).toEqual({ 30: 'small', 50: 'big' });
        await g.release();
      }
    }
  });

  it('an infeasible group fails at once naming the member and dimension; a feasible one behind it is granted', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'a', { cpus: 8, gpuIds: gpus(4) })).welcomed;
    await keep(fakeWorker(t.worker, 'b', { cpus: 8, gpuIds: gpus(4) })).welcomed;
    const holder = keep(claimGroup(t.placement, [{ cpus: 1, gpus: 4 }]));
    await holder.granted;
    const wide = keep(
      claimGroup(t.placement, [{ gpus: 4 }, { gpus: 4 }, { gpus: 4 }], GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD),
    );
    const err = await wide.ended;
    expect(err?.code).toBe(9); // FAILED_PRECONDITION
    expect(err?.details).toMatch(
      /^members\[\d\]\.machines: no set of machines could ever hold this strict_spread group/,
    );
    const tooBig = keep(claimGroup(t.placement, [{ cpus: 1 }, { cpus: 1, gpus: 5 }]));
    expect((await tooBig.ended)?.details).toMatch(/^members\[1\]\.gpus:/);
    const feasible = keep(
      claimGroup(t.placement, [{ gpus: 4 }, { gpus: 4 }], GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD),
    );
    const q = await feasible.queued;
    expect(q.dimension).toBe('machines'); // one machine has room for one member; the other is held
    expect(q.detail).toContain('too few machines for one member each');
    const snap = await snapshot(t.placement);
    expect(snap.groups.find((g) => g.state === 'waiting')?.members).toHaveLength(2);
    await holder.release();
    const g = await feasible.granted;
    expect(new Set(g.members.map((m) => m.machine))).toEqual(new Set(['a', 'b']));
  });

  it('bad input: INVALID_ARGUMENT naming the member field; nothing held', async () => {
    t = await startServer({ cpus: 4 });
    const bad = keep(claimGroup(t.placement, [{ cpus: 1 }, { cpus: 1, env: { CUDA_VISIBLE_DEVICES: '1' } }]));
    const e = await bad.ended;
    expect(e?.code).toBe(3);
    expect(e?.details).toMatch(/^members\[1\]\.env/);
    const share = keep(claimGroup(t.placement, [{ cpus: 1 }, { cpus: 1, gpuShare: 0.5 }]));
    expect((await share.ended)?.details).toMatch(/^members\[1\]\.gpu_share: a group member takes whole GPUs/);
    const typed = keep(claimGroup(t.placement, [{ cpus: 1, gpuType: 'a100' }]));
    expect((await typed.ended)?.details).toMatch(/^members\[0\]\.gpu_type/);
    const none = keep(claimGroup(t.placement, []));
    expect((await none.ended)?.details).toMatch(/^members: 1 to 1000 asks/);
    const s = await snapshot(t.placement);
    expect(s.groups).toEqual([]);
    expect(machine(s, 'engine').free?.cpus).toBe(4);
  });

  it('release, half-close, cancel and a worker leaving (on_member_lost: fail) each give every member back', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'a', { cpus: 4, gpuIds: gpus(2) })).welcomed;
    const b = keep(fakeWorker(t.worker, 'b', { cpus: 4, gpuIds: gpus(2) }));
    await b.welcomed;
    const members = [{ gpus: 2 }, { gpus: 2 }];
    const full = async () => {
      const s = await snapshot(t!.placement);
      return {
        groups: s.groups.length,
        a: machine(s, 'a').free?.gpus,
        b: s.machines.find((m) => m.name === 'b')?.free?.gpus,
      };
    };
    const g1 = keep(claimGroup(t.placement, members));
    await g1.granted;
    await g1.release();
    expect(await full()).toEqual({ groups: 0, a: 2, b: 2 });
    const g2 = keep(claimGroup(t.placement, members));
    await g2.granted;
    g2.call.end();
    expect(await g2.ended).toBeNull();
    expect(await full()).toEqual({ groups: 0, a: 2, b: 2 });
    const g3 = keep(claimGroup(t.placement, members));
    await g3.granted;
    const w = keep(watch(t.placement));
    await w.ready;
    const released = w.next((e) => e.kind === 'group_released');
    g3.call.cancel();
    // a grpc-js cancel sends END_STREAM before RST_STREAM: the server may see a half-close first
    expect(['stream_ended', 'half_closed']).toContain((await released).outcome);
    expect(await full()).toEqual({ groups: 0, a: 2, b: 2 });
    const g4 = keep(
      claimGroup(t.placement, members, GroupStrategy.GROUP_STRATEGY_PACK, OnMemberLost.ON_MEMBER_LOST_FAIL),
    );
    await g4.granted;
    b.close();
    const err = await g4.ended;
    expect(err?.code).toBe(14); // UNAVAILABLE
    expect(err?.details).toMatch(/member \d on b lost/);
    expect(await full()).toEqual({ groups: 0, a: 2, b: undefined });
  });
});
