/**
 * Fair sharing's share (SPEC Q1) through the placer, the books' invariants checked after every event: the share
 * that orders tenants is the dominant one over every resource (cores against GPUs), divided by the weight; weights
 * given by a reload turn fair sharing on at once, over what is already held and waiting; a machine attaching changes
 * every share.
 */
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { TenantQuotas } from '../../src/placement/quota.js';
import type { Grant, NormalizedAsk } from '../../src/placement/types.js';
import { placerAsk } from '../support/asks.js';

const ask = (owner: string, cpus: number, gpus = 0): NormalizedAsk =>
  placerAsk({ cpus, gpus, node: `${owner}-n`, owner });

/** A placer whose engine has 16 cores and 4 GPUs, and `quotas`; `broken` lists invariants that failed. */
function placer(quotas?: TenantQuotas) {
  const events = new EventBus();
  const broken: string[] = [];
  let n = 0;
  const p = new Placer({
    engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: 16, gpuIds: [0, 1, 2, 3] } },
    events,
    newClaimId: () => `c${++n}`,
    tenantQuotas: quotas,
  });
  events.subscribe((e) => {
    try {
      p.checkInvariants();
    } catch (err) {
      broken.push(`after ${e.kind}: ${(err as Error).message}`);
    }
  });
  const signal = new AbortController().signal;
  const claim = (a: NormalizedAsk) => p.claim(a, { signal });
  const share = (t: string) => p.tenantViews().find((v) => v.tenant === t)?.fair?.share;
  return { p, broken, claim, share };
}

const WEIGHTS: TenantQuotas = { alice: { nominal: {}, weight: 1 }, bob: { nominal: {}, weight: 1 } };

describe("a tenant's share", () => {
  it('is its dominant resource: 8 of 16 cores outweighs 1 of 4 GPUs, so the GPU user goes first', async () => {
    const { p, broken, claim, share } = placer(WEIGHTS);
    const cores = await claim(ask('alice', 8)); // alice: 0.5 of the cores
    const gpu = await claim(ask('bob', 1, 1)); // bob: 0.25 of the GPUs, 1/16 of the cores
    expect([share('alice'), share('bob')]).toEqual([0.5, 0.25]);
    await claim(ask('carol', 6, 3));
    const blocker = await claim(ask('carol', 1)); // the engine is full now
    const order: string[] = [];
    const a = claim(ask('alice', 1)).then(() => order.push('alice'));
    const b = claim(ask('bob', 1)).then(() => order.push('bob'));
    p.release(blocker.claimId); // room for one core: one of them: bob's share is lower though alice asked first
    await b;
    expect(order).toEqual(['bob']);
    p.release(gpu.claimId);
    await a;
    expect(order).toEqual(['bob', 'alice']);
    p.release(cores.claimId);
    expect(broken).toEqual([]);
  });

  it('orders the queue as soon as a reload gives weights, over claims already held and waiting', async () => {
    const { p, broken, claim, share } = placer({ alice: { nominal: {} }, bob: { nominal: {} } });
    const held: Grant[] = [];
    for (let i = 0; i < 4; i++) held.push(await claim(ask('alice', 1, 1))); // alice holds every GPU
    const waiting = [claim(ask('alice', 1, 1)), claim(ask('bob', 1, 1))];
    expect(p.snapshot().waiting.map((w) => w.node)).toEqual(['alice-n', 'bob-n']); // arrival order
    expect(share('alice')).toBeUndefined(); // fair sharing off: no share shown
    p.setTenantQuotas({ alice: { nominal: {}, weight: 2 }, bob: { nominal: {}, weight: 1 } });
    expect(share('alice')).toBe(0.5); // all 4 GPUs at weight 2, counted from the claims already held
    expect(p.snapshot().waiting.map((w) => w.node)).toEqual(['bob-n', 'alice-n']);
    p.release(held[0].claimId);
    await waiting[1]; // bob first
    expect(share('bob')).toBe(0.25);
    for (const g of held.slice(1)) p.release(g.claimId);
    await waiting[0];
    expect(broken).toEqual([]);
  });

  it('is recomputed when a machine attaches: the same claims are a smaller share of a larger cluster', async () => {
    const { p, broken, claim, share } = placer(WEIGHTS);
    await claim(ask('alice', 1, 2));
    expect(share('alice')).toBe(0.5);
    p.attach({ name: 'w1', labels: [], remote: true, inventory: { cpus: 16, gpuIds: [0, 1, 2, 3] } });
    expect(share('alice')).toBe(0.25);
    p.detach('w1');
    expect(share('alice')).toBe(0.5);
    expect(broken).toEqual([]);
  });
});
