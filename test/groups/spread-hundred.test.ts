/**
 * Two 100-member STRICT_SPREAD gangs on 100 machines through the real server (docs/rules.md G1, G4): one is granted,
 * the other holds nothing while it waits (the deadlock of two half-held gangs cannot happen), and gets every machine
 * once the first is released.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fakeWorker, type FakeWorker } from '../support/claims.js';
import { claimGroup, GroupStrategy, type GroupHandle } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

let t: TestServer | undefined;
const workers: FakeWorker[] = [];
const gangs: GroupHandle[] = [];
afterEach(async () => {
  for (const g of gangs.splice(0)) g.call.cancel();
  for (const w of workers.splice(0)) w.close();
  await t?.close();
  t = undefined;
});

describe('two 100-member STRICT_SPREAD gangs on 100 machines', () => {
  it('one is granted on every machine, the other holds nothing until the first is released', async () => {
    t = await startServer({ cpus: 0 });
    for (let i = 0; i < 100; i++) workers.push(fakeWorker(t.worker, `m${i}`, { cpus: 2, gpuIds: [0] }));
    await Promise.all(workers.map((w) => w.welcomed));
    const members = Array.from({ length: 100 }, () => ({ cpus: 1, gpus: 1 }));
    const x = claimGroup(t.placement, members, GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD);
    const y = claimGroup(t.placement, members, GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD);
    gangs.push(x, y);
    const first = await Promise.race([x.granted.then(() => x), y.granted.then(() => y)]);
    const second = first === x ? y : x;
    const g1 = await first.granted;
    expect(new Set(g1.members.map((m) => m.machine)).size).toBe(100);
    await second.queued;
    const s = await snapshot(t.placement);
    const waiting = s.groups.filter((g) => g.state === 'waiting');
    expect(waiting).toHaveLength(1);
    expect(waiting[0].members.every((m) => m.machine === '' && !m.allocation)).toBe(true);
    expect(s.machines.filter((m) => m.name !== 'engine').every((m) => m.free?.gpus === 0 && m.claims === 1)).toBe(true);
    await first.release();
    const g2 = await second.granted;
    expect(new Set(g2.members.map((m) => m.machine)).size).toBe(100);
  });
});
