/**
 * Satisfiable for a whole group through the real server (rule G8): real gRPC, the generated stubs, workers attached
 * by Hello. RUNS_NOW with an empty detail when the group fits now; WAITS naming the blocking member while machines
 * are busy; IMPOSSIBLE naming the member and dimension when no set of machines could ever hold it; nothing held or
 * queued by asking; bad members refused INVALID_ARGUMENT naming the member's field.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { type SatisfiableResponse, Verdict } from '../../generated/ts/berth/v1/placement.js';
import { ask, fakeWorker, type FakeWorker } from '../support/claims.js';
import { claimGroup, GroupStrategy, type GroupHandle } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

let t: TestServer | undefined;
const open: (GroupHandle | FakeWorker)[] = [];
afterEach(async () => {
  for (const x of open.splice(0)) 'release' in x ? x.call.cancel() : x.close();
  await t?.close();
  t = undefined;
});
const gpus = (n: number) => Array.from({ length: n }, (_, i) => i);

function judge(members: Partial<Ask>[], strategy: GroupStrategy): Promise<SatisfiableResponse> {
  return new Promise((resolve, reject) =>
    t!.placement.satisfiable(
      { ask: undefined, group: { members: members.map((m) => ask(m)), strategy, onMemberLost: 0 } },
      (e, r) => (e ? reject(e) : resolve(r!)),
    ),
  );
}

describe('Satisfiable for a group', () => {
  it('runs now, then waits naming the member while a gang holds the GPUs, and is impossible when never', async () => {
    t = await startServer({ cpus: 0 });
    for (const n of ['a', 'b']) {
      const w = fakeWorker(t.worker, n, { cpus: 8, gpuIds: gpus(4) });
      open.push(w);
      await w.welcomed;
    }
    const two = [
      { cpus: 1, gpus: 4 },
      { cpus: 1, gpus: 4 },
    ];
    expect(await judge(two, GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD)).toMatchObject({
      verdict: Verdict.VERDICT_RUNS_NOW,
      detail: '',
      limiting: '',
    });
    const before = await snapshot(t.placement);
    expect([before.groups, before.held, before.waiting]).toEqual([[], [], []]); // asking holds nothing

    const gang = claimGroup(t.placement, [{ cpus: 1, gpus: 4 }], GroupStrategy.GROUP_STRATEGY_PACK);
    open.push(gang);
    await gang.granted;
    const busy = await judge(two, GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD);
    expect(busy).toMatchObject({ verdict: Verdict.VERDICT_WAITS, limiting: 'machines' });
    expect(busy.detail).toMatch(/^members\[\d\]\.machines: /);

    const never = await judge(
      [
        { cpus: 1, gpus: 4 },
        { cpus: 1, gpus: 4 },
        { cpus: 1, gpus: 4 },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    expect(never).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'machines' });
    expect(never.detail).toContain('no set of machines could ever hold this strict_spread group');
    const big = await judge([{ cpus: 1, gpus: 5 }], GroupStrategy.GROUP_STRATEGY_STRICT_PACK);
    expect(big).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'gpus' });
    expect(big.detail).toMatch(/^members\[0\]\.gpus: .*the roomiest machine has 4 gpu\(s\)/);
    await gang.release();
    expect((await judge(two, GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD)).verdict).toBe(Verdict.VERDICT_RUNS_NOW);
  });

  it('a bad member is INVALID_ARGUMENT naming its field; an unknown required label is IMPOSSIBLE', async () => {
    t = await startServer({ cpus: 4 });
    const err = await judge([{ cpus: 1 }, { cpus: 1, holdMs: 5 }], GroupStrategy.GROUP_STRATEGY_PACK).catch((e) => e);
    expect((err as ServiceError).code).toBe(status.INVALID_ARGUMENT);
    expect((err as ServiceError).details).toMatch(/^members\[1\]\.hold_ms: a group member cannot be held/);
    const v = await judge([{ cpus: 1, label: 'tpu', policy: 2 }], GroupStrategy.GROUP_STRATEGY_PACK);
    expect(v).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'label' });
    expect(v.detail).toContain("members[0]: no machine carries label 'tpu'");
  });
});
