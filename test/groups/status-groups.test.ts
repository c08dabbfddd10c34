/**
 * `berth status` shows groups as one entry with their members (rule G1): a held group with each member's machine and
 * GPU ids, a waiting one with why it waits and what each member wants. Real server, real CLI (dist/).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fakeWorker, type FakeWorker } from '../support/claims.js';
import { runBerth } from '../support/cli.js';
import { claimGroup, GroupStrategy, type GroupHandle } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';

let t: TestServer | undefined;
const open: (GroupHandle | FakeWorker)[] = [];
afterEach(async () => {
  for (const x of open.splice(0)) 'release' in x ? x.call.cancel() : x.close();
  await t?.close();
  t = undefined;
});

describe('berth status with groups', () => {
  it('lists a held group with its members and a waiting one with why it waits', async () => {
    t = await startServer({ cpus: 0 });
    const w = fakeWorker(t.worker, 'gpu-box', { cpus: 8, gpuIds: [0, 1, 2, 3] });
    open.push(w);
    await w.welcomed;
    const members = [
      { cpus: 1, gpus: 2 },
      { cpus: 1, gpus: 2 },
    ];
    const held = claimGroup(t.placement, members, GroupStrategy.GROUP_STRATEGY_STRICT_PACK);
    open.push(held);
    const g = await held.granted;
    const waiting = claimGroup(t.placement, members);
    open.push(waiting);
    await waiting.queued;
    const r = await runBerth(['status', '--server', t.address]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('groups: 2');
    expect(r.stdout).toContain(`${g.groupId}: held, STRICT_PACK, 2 member(s)`);
    expect(r.stdout).toMatch(/waiting, PACK, 2 member\(s\)/);
    expect(r.stdout).toMatch(/waits: member \d \(gpus\)/);
    expect(r.stdout).toMatch(/ {2}0 +gpu-box +1 +0,1\n/);
    expect(r.stdout).toMatch(/ {2}1 +- +1 +2 wanted/);
  });
});
