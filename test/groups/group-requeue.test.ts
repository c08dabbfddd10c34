/**
 * on_member_lost: requeue (rule G9) through the real server: real gRPC, the generated stubs, workers attached by
 * Hello. Two gangs each losing one machine recover all-or-nothing: both are given back whole, both wait again at
 * their first arrival position on their own stream (GroupQueued with requeued set), the older is granted again on
 * the machines left, the younger holds nothing until machines come, and no snapshot ever shows part of a gang held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupGranted } from '../../generated/ts/berth/v1/groups.js';
import type { GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { fakeWorker, watch, type FakeWorker } from '../support/claims.js';
import { claimGroup, GroupStrategy, type GroupHandle } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

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

describe('on_member_lost: requeue', () => {
  it('two gangs each losing one machine recover all-or-nothing, the older first, at their arrival position', async () => {
    t = await startServer({ cpus: 0 });
    const workers = new Map<string, FakeWorker>();
    const attach = async (name: string) => {
      const w = keep(fakeWorker(t!.worker, name, { cpus: 8, gpuIds: gpus(4) }));
      await w.welcomed;
      workers.set(name, w);
    };
    for (const n of ['w1', 'w2', 'w3', 'w4']) await attach(n);
    const w = keep(watch(t.placement));
    await w.ready;
    const bad: string[] = [];
    const checks: Promise<void>[] = [];
    const client = t.placement;
    w.next((e) => {
      checks.push(snapshot(client).then((s) => void bad.push(...partial(s).map((g) => `${e.kind}: ${g}`))));
      return false;
    });

    const gang = () => [
      { cpus: 1, gpus: 4 },
      { cpus: 1, gpus: 4 },
    ];
    const a = keep(claimGroup(t.placement, gang(), GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD));
    const ga = await a.granted;
    const b = keep(claimGroup(t.placement, gang(), GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD));
    const gb = await b.granted;
    const on = (g: GroupGranted) => g.members.map((m) => m.machine);
    expect(new Set([...on(ga), ...on(gb)]).size).toBe(4);

    // Each gang loses one machine: A's member 1, then B's member 0.
    const aLost = a.next((r) => r.kind?.$case === 'queued' && r.kind.value.requeued);
    workers.get(on(ga)[1])?.close();
    const qa = await aLost;
    expect(qa.kind?.$case === 'queued' && qa.kind.value.detail).toMatch(/member 1 on w\d lost; waiting again/);
    const bLost = b.next((r) => r.kind?.$case === 'queued' && r.kind.value.requeued);
    workers.get(on(gb)[0])?.close();
    await bLost;

    // The older gang is granted again, whole, on the two machines left; the younger holds nothing.
    const againA = await a.next((r) => r.kind?.$case === 'granted' && r.kind.value !== ga);
    const ga2 = againA.kind?.$case === 'granted' ? againA.kind.value : undefined;
    const left = [on(ga)[0], on(gb)[1]].sort();
    expect(ga2 && on(ga2).sort()).toEqual(left);
    expect(ga2?.groupId).toBe(ga.groupId);
    let s = await snapshot(t.placement);
    expect(s.groups.map((g) => [g.groupId, g.state])).toEqual([
      [ga.groupId, 'held'],
      [gb.groupId, 'waiting'],
    ]);
    expect(s.groups[1].members.every((m) => m.machine === '')).toBe(true);

    // One new machine is not enough for B (STRICT_SPREAD of 2); with a second one it is granted whole.
    await attach('w5');
    s = await snapshot(t.placement);
    expect(s.groups.find((g) => g.groupId === gb.groupId)?.state).toBe('waiting');
    const againB = b.next((r) => r.kind?.$case === 'granted' && r.kind.value !== gb);
    await attach('w6');
    const gb2 = (await againB).kind;
    expect(gb2?.$case === 'granted' && on(gb2.value).sort()).toEqual(['w5', 'w6']);

    await Promise.all([a.release(), b.release()]);
    await Promise.all(checks);
    expect(bad).toEqual([]);
    expect((await snapshot(t.placement)).groups).toEqual([]);
  });
});
