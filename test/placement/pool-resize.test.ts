/**
 * Resizing a pool (issue 23; a config reload of `pools`): shrinking below what is held revokes nothing and blocks new
 * grants until enough comes back; growing wakes the waiters; a waiter asking more than the new total fails
 * FAILED_PRECONDITION naming the pool; an unknown pool or a bad total is INVALID_ARGUMENT and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { BerthError } from '../../src/errors.js';
import { EventBus } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { Grant, NormalizedAsk } from '../../src/placement/types.js';
import { UNIT } from '../../src/resources/quantity.js';

const LIC = 'license/matlab';
const ask = (n: number): NormalizedAsk => ({
  cpus: 1,
  gpus: 0,
  resources: { [LIC]: n * UNIT },
  label: '',
  policy: 'prefer',
  node: 'n',
  runId: 'r',
  env: {},
});

function placer(licenses: number) {
  const events = new EventBus();
  let n = 0;
  const p = new Placer({
    engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: 64, gpuIds: [] } },
    events,
    pools: { [LIC]: licenses * UNIT },
    newClaimId: () => `c${++n}`,
  });
  events.subscribe(() => p.checkInvariants());
  const free = () => p.snapshot().pools.find((x) => x.name === LIC)?.free;
  return { p, free, claim: (a: NormalizedAsk) => p.claim(a, { signal: new AbortController().signal }) };
}

const settled = async (x: Promise<Grant>) => {
  let g: Grant | undefined;
  let e: unknown;
  x.then((v) => (g = v)).catch((err) => (e = err));
  await new Promise((r) => setImmediate(r));
  return { g, e: e as BerthError | undefined };
};

describe('Placer.resizePool', () => {
  it('shrinking below what is held revokes nothing and blocks new grants until enough comes back', async () => {
    const { p, free, claim } = placer(3);
    const held = [await claim(ask(1)), await claim(ask(1)), await claim(ask(1))];
    p.resizePool(LIC, 1 * UNIT);
    expect(held.every((g) => !g.lost.aborted && p.get(g.claimId))).toBe(true);
    expect(free()).toBe(0);
    const next = claim(ask(1));
    p.release(held[0].claimId);
    p.release(held[1].claimId);
    expect((await settled(next)).g).toBeUndefined(); // 1 still held of a total of 1
    p.release(held[2].claimId);
    expect((await settled(next)).g?.allocation.resources).toEqual({ [LIC]: UNIT });
    expect(free()).toBe(0);
  });

  it('growing wakes a waiter; a waiter asking more than a new total fails FAILED_PRECONDITION', async () => {
    const { p, free, claim } = placer(1);
    await claim(ask(1));
    const one = claim(ask(1));
    expect((await settled(one)).g).toBeUndefined();
    p.resizePool(LIC, 3 * UNIT);
    expect((await settled(one)).g).toBeDefined();
    const two = claim(ask(2)); // 1 of 3 free: waits
    expect((await settled(two)).g).toBeUndefined();
    p.resizePool(LIC, 1 * UNIT);
    const { e } = await settled(two);
    expect(e?.kind).toBe('failed_precondition');
    expect(e?.message).toBe(`ask.resources.${LIC}: asked 2 but pool ${LIC} now holds 1`);
    expect(p.snapshot().waiting).toEqual([]);
    expect(free()).toBe(0);
  });

  it('an unknown pool or a bad total is INVALID_ARGUMENT naming it and changes nothing', () => {
    const { p, free } = placer(2);
    const err = (f: () => void) => {
      try {
        f();
      } catch (e) {
        return e as BerthError;
      }
    };
    expect(err(() => p.resizePool('license/nope', UNIT))?.message).toMatch(/^pools\.license\/nope: not a pool/);
    expect(err(() => p.resizePool(LIC, -1))?.kind).toBe('invalid_argument');
    expect(err(() => p.resizePool(LIC, 0.5))?.message).toMatch(/^pools\.license\/matlab: a total of 0.5 units/);
    expect(free()).toBe(2 * UNIT);
  });
});
