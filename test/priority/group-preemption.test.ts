/**
 * Preemption for a gang through the real server over gRPC (SPEC Q2, rule G1, issue 22 item 2): a waiting group of a
 * class that may preempt evicts the fewest strictly lower claims on the set of machines that would then hold every
 * member; its members' room there is held for it during the grace, so lower claims take none of it, and it is granted
 * whole once the victims gave their GPUs back. A group that fits nowhere even after every lower claim went evicts
 * nobody and says so. A gang is a victim only whole: it hears the notice on its stream and is given back whole.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { renderStatus } from '../../src/cli/render-status.js';
import { claim, fakeWorker, type ClaimHandle, type FakeWorker } from '../support/claims.js';
import { claimGroup, GroupStrategy, type GroupHandle, OnMemberLost } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

let t: TestServer | undefined;
let dir: string | undefined;
const open: (ClaimHandle | GroupHandle)[] = [];
const workers: FakeWorker[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.call.cancel();
  for (const w of workers.splice(0)) w.close();
  await t?.close();
  t = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A server whose class urgent (100) may preempt the default class batch (0), `grace` s, and two 4-GPU workers. */
async function serve(grace: number, names = ['w1', 'w2']): Promise<TestServer> {
  dir = mkdtempSync(join(tmpdir(), 'berth-group-preempt-'));
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, 'priority_classes:\n  urgent: { value: 100 }\n  batch: { value: 0, default: true }\n');
  const s = await startServer({ cpus: 0, flags: { config, preemptionGrace: grace } });
  for (const name of names) {
    const w = fakeWorker(s.worker, name, { cpus: 8, gpuIds: [0, 1, 2, 3] }, [name]);
    workers.push(w);
    await w.welcomed;
  }
  return s;
}

const held = (a: Parameters<typeof claim>[1]) => {
  const c = claim(t!.placement, a);
  open.push(c);
  return c;
};
const gang = (members: Parameters<typeof claimGroup>[1], strategy: GroupStrategy) => {
  const g = claimGroup(t!.placement, members, strategy, OnMemberLost.ON_MEMBER_LOST_UNSPECIFIED, {
    priorityClass: 'urgent',
  });
  open.push(g);
  return g;
};
const told = (cs: ClaimHandle[]) => cs.filter((c) => c.responses.some((r) => r.kind?.$case === 'preempting'));

/**
 * A batch gang of 2 × 2 GPUs packed on one of w1/w2 (`where`), the other machine full of urgent claims (`fill`),
 * then an urgent 4-GPU claim (`urgent`, its first Queued `q`) that can only have the gang's machine.
 */
async function packedGangPreempted() {
  const g = claimGroup(
    t!.placement,
    [
      { cpus: 1, gpus: 2, node: 'g.0' },
      { cpus: 1, gpus: 2, node: 'g.1' },
    ],
    GroupStrategy.GROUP_STRATEGY_STRICT_PACK,
  );
  open.push(g);
  const where = (await g.granted).members[0].machine;
  const other = where === 'w1' ? 'w2' : 'w1';
  const fill = Array.from({ length: 4 }, (_, i) =>
    held({ cpus: 1, gpus: 1, node: `u${i}`, priorityClass: 'urgent', label: other, policy: Policy.POLICY_REQUIRE }),
  );
  await Promise.all(fill.map((u) => u.granted));
  const urgent = held({ cpus: 1, gpus: 4, node: 'big', priorityClass: 'urgent' });
  const q = await urgent.queued;
  return { g, where, fill, urgent, q };
}

describe('preemption for a group (SPEC Q2, rule G1)', () => {
  it('a strict-spread gang of two 2-GPU members on two full machines evicts two 1-GPU claims on each, holds the room in the grace, and is granted whole', async () => {
    t = await serve(60, ['w1', 'w2', 'w3']);
    const w3 = { label: 'w3', policy: Policy.POLICY_REQUIRE };
    const fill = Array.from({ length: 4 }, (_, i) =>
      held({ cpus: 1, gpus: 1, node: `u${i}`, priorityClass: 'urgent', ...w3 }),
    );
    await Promise.all(fill.map((u) => u.granted));
    // an older urgent gang that only w3 could hold, and nothing there may be evicted for it: it waits first and
    // reserves on w3 (rule G4), so the gang below holds its own room through its preemption, not that reservation
    const first = gang(
      [
        { cpus: 1, gpus: 2, node: 'f.0', ...w3 },
        { cpus: 1, gpus: 2, node: 'f.1', ...w3 },
      ],
      GroupStrategy.GROUP_STRATEGY_PACK,
    );
    expect((await first.queued).detail).toContain('preempting nothing');
    const batch = Array.from({ length: 8 }, (_, i) => held({ cpus: 1, gpus: 1, node: `b${i}` }));
    await Promise.all(batch.map((b) => b.granted));

    const g = gang(
      [
        { cpus: 1, gpus: 2, node: 'g.0' },
        { cpus: 1, gpus: 2, node: 'g.1' },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    const q = await g.queued;
    expect(q.detail).toMatch(/preempting 4 lower-priority claims on w[12], w[12] \(grace 60 s\)/);
    const notices = await Promise.all(batch.map((b) => Promise.race([b.preempting, g.queued.then(() => null)])));
    const victims = told(batch);
    expect(victims).toHaveLength(4);
    const on = new Map<string, number>();
    for (const v of victims) {
      const where = (await v.granted).machine;
      on.set(where, (on.get(where) ?? 0) + 1);
    }
    expect(Object.fromEntries(on)).toEqual({ w1: 2, w2: 2 }); // the fewest on each machine the gang needs
    expect(notices.filter((n) => n !== null).every((n) => n!.byClaimId === q.groupId)).toBe(true);
    expect((await victims[0].preempting).detail).toContain(`preempted by group ${q.groupId} of priority 100`);

    // one victim gives its GPU back early: a lower claim arriving now does not take it
    await victims[0].release();
    const late = held({ cpus: 1, gpus: 1, node: 'late' });
    await late.queued;
    expect((await snapshot(t.placement)).held.some((h) => h.node === 'late')).toBe(false);

    for (const v of victims.slice(1)) await v.release();
    const granted = await g.granted;
    expect(granted.members.map((m) => m.machine).sort()).toEqual(['w1', 'w2']);
    const s = await snapshot(t.placement);
    expect(s.held.filter((h) => h.node.startsWith('b'))).toHaveLength(4); // the other four keep their GPUs
    expect(s.waiting.map((w) => w.node)).toEqual(['late']);
    expect(told(fill)).toEqual([]); // equal priority: never a victim
  });

  it('a gang that would not fit even once every lower claim went evicts nobody and says why; a smaller one after it takes the batch GPUs', async () => {
    t = await serve(60);
    const on = (i: number) => ({ label: i % 2 ? 'w2' : 'w1', policy: Policy.POLICY_REQUIRE });
    const urgent = Array.from({ length: 6 }, (_, i) =>
      held({ cpus: 1, gpus: 1, node: `u${i}`, priorityClass: 'urgent', ...on(i) }),
    );
    await Promise.all(urgent.map((u) => u.granted));
    const batch = Array.from({ length: 2 }, (_, i) => held({ cpus: 1, gpus: 1, node: `b${i}`, ...on(i) }));
    await Promise.all(batch.map((b) => b.granted)); // each machine: 3 urgent GPUs and 1 batch GPU
    const big = gang(
      [
        { cpus: 1, gpus: 2, node: 'g.0' },
        { cpus: 1, gpus: 2, node: 'g.1' },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    expect((await big.queued).detail).toContain(
      'preempting nothing: on no machine would giving back lower-priority claims make room',
    );
    expect(told([...batch, ...urgent])).toEqual([]);
    big.call.cancel(); // once the server has let it go, its reservations go with it
    await until(async () => (await snapshot(t!.placement)).groups.length === 0);

    const small = gang(
      [
        { cpus: 1, gpus: 1, node: 's.0' },
        { cpus: 1, gpus: 1, node: 's.1' },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    expect((await small.queued).detail).toMatch(/preempting 2 lower-priority claims on w[12], w[12]/);
    await Promise.all(batch.map((b) => b.preempting));
    for (const b of batch) await b.release();
    expect((await small.granted).members.map((m) => m.machine).sort()).toEqual(['w1', 'w2']);
    expect(told(urgent)).toEqual([]);
  });

  it('a gang is a victim only whole: an urgent 4-GPU claim preempts a batch gang packed on one machine, which hears it and ends ABORTED at the grace', async () => {
    t = await serve(0.2);
    const { g, where, fill, urgent, q } = await packedGangPreempted();
    expect(q.detail).toMatch(new RegExp(`preempting 1 lower-priority group \\(whole\\) on ${where}`));
    const notice = await g.next((r) => r.kind?.$case === 'preempting');
    expect(notice.kind?.$case === 'preempting' && notice.kind.value.detail).toMatch(
      new RegExp(`^group g-\\S+ \\(priority 0\\) on ${where} preempted by claim ${q.claimId} of priority 100`),
    );
    const err = await g.ended; // the grace ran out: given back whole
    expect(err?.code).toBe(status.ABORTED);
    expect(err?.details).toMatch(/^group g-\S+ released \(preempted by claim /);
    expect((await urgent.granted).machine).toBe(where);
    const s = await snapshot(t.placement);
    expect(s.held.filter((h) => h.node.startsWith('g.'))).toEqual([]);
    expect(s.groups).toEqual([]);
    expect(told(fill)).toEqual([]);
  });

  it('a gang being preempted that loses a machine in its grace ends; it is not requeued (on_member_lost requeue)', async () => {
    t = await serve(60, ['w1', 'w2', 'w3']);
    const w3 = { label: 'w3', policy: Policy.POLICY_REQUIRE };
    const fill = Array.from({ length: 4 }, (_, i) =>
      held({ cpus: 1, gpus: 1, node: `u${i}`, priorityClass: 'urgent', ...w3 }),
    );
    await Promise.all(fill.map((u) => u.granted));
    const g = claimGroup(
      t.placement,
      [
        { cpus: 1, gpus: 4, node: 'g.0' },
        { cpus: 1, gpus: 4, node: 'g.1' },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
      OnMemberLost.ON_MEMBER_LOST_REQUEUE,
    );
    open.push(g);
    const members = (await g.granted).members.map((m) => m.machine).sort();
    expect(members).toEqual(['w1', 'w2']);
    const urgent = held({ cpus: 1, gpus: 4, node: 'big', priorityClass: 'urgent' });
    await g.next((r) => r.kind?.$case === 'preempting');
    workers[0].close(); // w1, the first attached: a member's machine goes in the grace
    const err = await g.ended;
    expect(err?.details).toMatch(/member \d on w1 lost/);
    expect(g.responses.some((r) => r.kind?.$case === 'queued' && r.kind.value.requeued)).toBe(false);
    expect((await urgent.granted).machine).toBe('w2'); // the rest of the gang went with it
  });

  it('a claim alone is preempted before a younger gang of the same priority (the gang would go whole)', async () => {
    t = await serve(60, ['w1', 'w2', 'w3']);
    const on = (name: string) => ({ label: name, policy: Policy.POLICY_REQUIRE });
    const p = held({ cpus: 1, gpus: 2, node: 'p', ...on('w3') });
    await p.granted;
    const g = claimGroup(
      t.placement,
      [
        { cpus: 1, gpus: 2, node: 'g.0', ...on('w1') },
        { cpus: 1, gpus: 2, node: 'g.1', ...on('w2') },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    open.push(g);
    await g.granted;
    const fill = ['w1', 'w1', 'w2', 'w2', 'w3', 'w3'].map((m, i) =>
      held({ cpus: 1, gpus: 1, node: `u${i}`, priorityClass: 'urgent', ...on(m) }),
    );
    await Promise.all(fill.map((u) => u.granted)); // every GPU held
    const urgent = held({ cpus: 1, gpus: 2, node: 'big', priorityClass: 'urgent' });
    expect((await urgent.queued).detail).toContain('preempting 1 lower-priority claim on w3');
    await p.preempting;
    expect(g.responses.some((r) => r.kind?.$case === 'preempting')).toBe(false);
  });

  it('a gang being preempted shows it in GetSnapshot and berth status; released in its grace, the preemptor gets the room', async () => {
    t = await serve(60);
    const { g, where, urgent, q } = await packedGangPreempted();
    await g.next((r) => r.kind?.$case === 'preempting');
    const s = await snapshot(t.placement);
    expect(s.groups[0]).toMatchObject({ state: 'held', preemptedBy: q.claimId });
    expect(s.groups[0].preemptLeftMs).toBeGreaterThan(50_000);
    expect(renderStatus(s)).toMatch(new RegExp(`PREEMPTED by ${q.claimId}, \\d+(\\.\\d)?s left`));
    await g.release(); // given back in the grace: no error
    expect((await urgent.granted).machine).toBe(where);
  });
});
