/**
 * Fractional and typed GPUs (issue 23 items 3–4, SPEC P14) through the placer, the books' invariants checked after
 * every event (no GPU's shares over 1, no GPU held whole and shared at once): the anchors ray#20933 (10 × 0.6 on
 * 2 × 8 GPUs), ray#52133 (80 × 0.18: 5 per GPU), ray#13680 (4 × 0.25 fill one GPU), 10,000 × 0.0001 fill one GPU
 * and the next waits, Slurm 23.11's whole-and-shard (never at once), best fit, the env, and typed devices.
 */
import { describe, expect, it } from 'vitest';
import { Policy, type Ask } from '../../generated/ts/berth/v1/resources.js';
import type { BerthError } from '../../src/errors.js';
import { EventBus } from '../../src/events.js';
import { normalizeAsk } from '../../src/placement/ask.js';
import { Placer } from '../../src/placement/placer.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from '../../src/placement/types.js';

const ask = (a: Partial<Ask>): NormalizedAsk =>
  normalizeAsk({
    gpus: 0,
    label: '',
    policy: Policy.POLICY_UNSPECIFIED,
    node: 'n',
    runId: 'r',
    env: {},
    holdMs: 0,
    resources: {},
    ...a,
  });
const share = (s: number, extra: Partial<Ask> = {}) => ask({ cpus: 0, gpuShare: s, ...extra });
const box = (name: string, gpus: number, extra: Partial<MachineSpec['inventory']> = {}): MachineSpec => ({
  name,
  labels: [],
  remote: true,
  inventory: { cpus: 64, gpuIds: Array.from({ length: gpus }, (_, i) => i), ...extra },
});

/** A placer with a 0-core engine; `broken` lists every invariant that failed after an event. */
function placer() {
  const events = new EventBus();
  const broken: string[] = [];
  let n = 0;
  const p = new Placer({
    engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: 0, gpuIds: [] } },
    events,
    newClaimId: () => `c${++n}`,
  });
  events.subscribe((e) => {
    try {
      p.checkInvariants();
    } catch (err) {
      broken.push(`after ${e.kind}: ${(err as Error).message}`);
    }
  });
  const queued: QueuedInfo[] = [];
  const claim = (a: NormalizedAsk, signal = new AbortController().signal) =>
    p.claim(a, { signal, onQueued: (q) => queued.push(q) });
  return { p, claim, queued, broken };
}

/** The grant `x` resolved with by the next turn of the event loop, or undefined while it waits. */
const settled = async (x: Promise<Grant>) => {
  let g: Grant | undefined;
  void x.then((v) => (g = v));
  await new Promise((r) => setImmediate(r));
  return g;
};

/** Claims held per GPU id of `machine`: `${machine}/${id}` → count. */
const perGpu = (gs: Grant[]) => {
  const m = new Map<string, number>();
  for (const g of gs)
    for (const id of g.allocation.gpuIds) m.set(`${g.machine}/${id}`, (m.get(`${g.machine}/${id}`) ?? 0) + 1);
  return m;
};

describe('fractional GPUs (SPEC P14)', () => {
  it('gpus is a fraction in (0, 1) or a whole number: 1.5, finer than 0.0001 and a share with gpus are refused', () => {
    expect(share(0.5).gpuShare).toBe(5000);
    for (const bad of [1.5, 1, 0.00005, -0.5]) {
      try {
        share(bad);
        expect.unreachable(`${bad} accepted`);
      } catch (err) {
        expect((err as BerthError).kind).toBe('invalid_argument');
        expect((err as Error).message).toMatch(/^ask\.gpu_share: .*whole GPUs go in ask\.gpus/);
        expect((err as Error).message).toContain(`(got ${bad})`);
      }
    }
    expect(() => ask({ gpus: 1, gpuShare: 0.5 })).toThrow(/ask\.gpu_share: .*set ask\.gpus to 0/);
  });

  it('ray#13680: 4 × 0.25 fill one GPU exactly; a fifth waits; the env names the id and the share', async () => {
    const { p, claim, queued, broken } = placer();
    p.attach(box('a', 1));
    const gs = await Promise.all([1, 2, 3, 4].map(() => claim(share(0.25))));
    expect(gs.map((g) => g.allocation.gpuIds)).toEqual([[0], [0], [0], [0]]);
    expect(gs[0].allocation.env.CUDA_VISIBLE_DEVICES).toBe('0');
    expect(gs[0].allocation.env.BERTH_GPU_SHARE).toBe('0.25');
    expect(gs[0].allocation.gpuShare).toBe(2500);
    const fifth = claim(share(0.25));
    expect(await settled(fifth)).toBeUndefined();
    expect(queued.at(-1)?.detail).toContain('0.25 gpu(s)');
    expect(queued.at(-1)?.detail).toContain('waiting for 0.25 of a GPU: at most 0 of one GPU free');
    p.release(gs[2].claimId); // a release of a share wakes the waiter it can serve
    expect((await fifth).allocation.gpuIds).toEqual([0]);
    expect(broken).toEqual([]);
  });

  it('a share that fits no GPU says how much of one GPU is free at most', async () => {
    const { p, claim, queued, broken } = placer();
    p.attach(box('a', 1));
    const held = await claim(share(0.75));
    const half = claim(share(0.5));
    expect(await settled(half)).toBeUndefined();
    expect(queued.at(-1)?.detail).toContain('waiting for 0.5 of a GPU: at most 0.25 of one GPU free');
    p.release(held.claimId);
    expect((await half).allocation.gpuShare).toBe(5000);
    expect(broken).toEqual([]);
  });

  it('ray#20933: 10 × 0.6 on 2 machines × 8 GPUs all place, each on a GPU of its own', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('a', 8));
    p.attach(box('b', 8));
    const gs = await Promise.all(Array.from({ length: 10 }, () => claim(share(0.6))));
    expect([...perGpu(gs).values()].every((n) => n === 1)).toBe(true);
    expect(perGpu(gs).size).toBe(10);
    expect(broken).toEqual([]);
  });

  it('ray#52133: 80 × 0.18 take 5 per GPU (16 GPUs, none over 1); the 81st waits', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('a', 8));
    p.attach(box('b', 8));
    const gs = await Promise.all(Array.from({ length: 80 }, () => claim(share(0.18))));
    const per = perGpu(gs);
    expect(per.size).toBe(16);
    expect([...per.values()].every((n) => n === 5)).toBe(true);
    expect(await settled(claim(share(0.18)))).toBeUndefined();
    expect(broken).toEqual([]);
  });

  it('10,000 × 0.0001 fill one GPU exactly; the next waits', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('a', 1));
    for (let i = 0; i < 10_000; i++) await claim(share(0.0001));
    expect(await settled(claim(share(0.0001)))).toBeUndefined();
    expect(p.machines.get('a')?.books.sharedOf(0)).toBe(10_000);
    expect(broken).toEqual([]);
  });

  it('best fit: a share fills the partly used GPU that leaves the least over, not a fresh one', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('a', 3));
    const g0 = await claim(share(0.5)); // gpu 0: 0.5
    const g1 = await claim(share(0.7)); // gpu 1: 0.7 (0.5 left on gpu 0 is too little)
    expect([g0.allocation.gpuIds, g1.allocation.gpuIds]).toEqual([[0], [1]]);
    const g2 = await claim(share(0.3)); // fits both: gpu 1 leaves 0, gpu 0 leaves 0.2
    expect(g2.allocation.gpuIds).toEqual([1]);
    const g3 = await claim(share(0.5));
    expect(g3.allocation.gpuIds).toEqual([0]);
    expect(broken).toEqual([]);
  });

  it('Slurm 23.11: a GPU is never whole and shared at once — whole asks take only untouched GPUs', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('a', 2));
    const s = await claim(share(0.1));
    const whole = await claim(ask({ cpus: 0, gpus: 1 }));
    expect(whole.allocation.gpuIds).not.toEqual(s.allocation.gpuIds);
    const s2 = await claim(share(0.9)); // the rest of the shared GPU, never the one held whole
    expect(s2.allocation.gpuIds).toEqual(s.allocation.gpuIds);
    const another = claim(ask({ cpus: 0, gpus: 1 })); // gpu 0 holds shares: a whole ask waits
    expect(await settled(another)).toBeUndefined();
    const small = claim(share(0.1)); // younger than the whole waiter: waits behind it (SPEC P7)
    p.release(s.claimId);
    expect(await settled(another)).toBeUndefined(); // 0.9 still held: not whole yet
    expect(await settled(small)).toBeUndefined();
    p.release(s2.claimId);
    expect((await another).allocation.gpuIds).toEqual(s.allocation.gpuIds);
    expect(await settled(small)).toBeUndefined(); // both GPUs held whole now
    p.release(whole.claimId);
    expect((await small).allocation.gpuIds).toEqual(whole.allocation.gpuIds);
    expect(broken).toEqual([]);
  });

  it('a share on a cluster with no GPU is clamped to none; Satisfiable speaks fractions', async () => {
    const { p, claim } = placer();
    p.attach(box('cpu', 0));
    const g = await claim(share(0.5, { cpus: 1 }));
    expect(g.clamped).toBe(true);
    expect(g.allocation.gpuIds).toEqual([]);
    expect(g.allocation.env.BERTH_GPU_SHARE).toBeUndefined();
    p.attach(box('gpu', 1));
    expect(p.verdict(share(0.5)).verdict).toBe('runs_now');
  });
});

describe('typed GPUs (issue 23 item 4)', () => {
  it('an ask naming gpu_type lands only on a machine of its type; device names reach CUDA_VISIBLE_DEVICES as given', async () => {
    const { p, claim, broken } = placer();
    p.attach(box('t4', 4, { gpuType: 't4' }));
    const uuids = ['MIG-1b2c3d4e-0000-1111-2222-333344445555', 'MIG-1b2c3d4e-0000-1111-2222-333344446666'];
    p.attach(box('a100', 2, { gpuType: 'a100', gpuNames: uuids }));
    const g = await claim(ask({ cpus: 1, gpus: 2, gpuType: 'a100' }));
    expect(g.machine).toBe('a100');
    expect(g.allocation.env.CUDA_VISIBLE_DEVICES).toBe(uuids.join(','));
    const next = claim(ask({ cpus: 1, gpus: 1, gpuType: 'a100' })); // the t4 box is free, but not its type
    expect(await settled(next)).toBeUndefined();
    const sh = await claim(share(0.5, { gpuType: 't4' }));
    expect(sh.machine).toBe('t4');
    expect(sh.allocation.env.CUDA_VISIBLE_DEVICES).toBe('0');
    p.release(g.claimId);
    expect((await next).machine).toBe('a100');
    expect(broken).toEqual([]);
  });

  it('a type no machine has fails at once, FAILED_PRECONDITION naming it; Satisfiable: impossible', async () => {
    const { p, claim } = placer();
    p.attach(box('t4', 4, { gpuType: 't4' }));
    const err = await claim(ask({ cpus: 1, gpus: 1, gpuType: 'h100' })).catch((e: BerthError) => e);
    expect((err as BerthError).kind).toBe('failed_precondition');
    expect((err as Error).message).toMatch(
      /^ask\.gpu_type: no machine has GPUs of type 'h100' and no provisioner shape starts one \(types here: t4/,
    );
    expect(p.verdict(ask({ cpus: 1, gpus: 1, gpuType: 'h100' }))).toMatchObject({
      verdict: 'impossible',
      limiting: 'gpu_type',
    });
  });
});
