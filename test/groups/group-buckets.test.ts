/**
 * The group search over capacity buckets (rule G2, group-fit.ts): many identical machines are one bin, yet every
 * member gets a machine of its own where the strategy says so, a held machine or one with room held back is searched
 * on its own, memory asks are judged per machine, and over seeded random clusters a group is granted at once exactly
 * when an exhaustive search over every machine finds a fit.
 */
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events.js';
import type { GroupStrategy } from '../../src/placement/group-fit.js';
import { Placer } from '../../src/placement/placer.js';
import type { MachineSpec, NormalizedAsk } from '../../src/placement/types.js';
import { prng } from '../support/placement-rules.js';

const ask = (a: Partial<NormalizedAsk>): NormalizedAsk => ({
  cpus: 1,
  gpus: 0,
  label: '',
  policy: 'prefer',
  node: 'n',
  runId: 'r',
  env: {},
  ...a,
});
const spec = (name: string, cpus: number, gpus: number, ramMb?: number): MachineSpec => ({
  name,
  labels: [],
  inventory: { cpus, gpuIds: Array.from({ length: gpus }, (_, i) => i), ...(ramMb ? { ramMb } : {}) },
  remote: true,
});

function placer(specs: MachineSpec[]): Placer {
  const p = new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false },
    events: new EventBus(),
  });
  for (const s of specs) p.attach(s);
  return p;
}
const signal = () => new AbortController().signal;
const now = (p: Placer, asks: NormalizedAsk[], strategy: GroupStrategy) => {
  const g = p.claimGroup(asks, strategy, { signal: signal() });
  if (g instanceof Promise) throw new Error('the group waited');
  return g;
};

describe('group search over capacity buckets', () => {
  it('on 1,000 identical machines PACK fills 5 and STRICT_SPREAD takes 40 other, distinct machines', () => {
    const p = placer(Array.from({ length: 1000 }, (_, i) => spec(`m${i}`, 32, 8)));
    const members = () => Array.from({ length: 40 }, () => ask({ cpus: 4, gpus: 1 }));
    const pack = now(p, members(), 'pack');
    const per = new Map<string, number>();
    for (const m of pack.members) per.set(m.machine, (per.get(m.machine) ?? 0) + 1);
    expect([...per.values()]).toEqual([8, 8, 8, 8, 8]);
    const spread = now(p, members(), 'strict_spread');
    expect(new Set(spread.members.map((m) => m.machine)).size).toBe(40);
    for (const m of spread.members) expect(per.has(m.machine)).toBe(false);
    // PACK goes tightest first: a third gang fills the machines the spread one opened before any idle one
    const third = now(
      p,
      Array.from({ length: 7 }, () => ask({ cpus: 4, gpus: 1 })),
      'pack',
    );
    expect(spread.members.map((m) => m.machine)).toContain(third.members[0].machine);
    expect(new Set(third.members.map((m) => m.machine)).size).toBe(1);
    p.checkInvariants();
    for (const g of [pack, spread, third]) p.releaseGroup(g.groupId);
    p.checkInvariants();
  });

  it('a disconnected (held) machine gets no member even when it is the only roomy one', async () => {
    const p = placer([spec('a', 8, 4), spec('b', 8, 4), spec('c', 8, 4)]);
    p.disconnect('b', Date.now() + 60_000, 'test hold');
    const g = now(p, [ask({ gpus: 4 }), ask({ gpus: 4 })], 'strict_spread');
    expect(g.members.map((m) => m.machine).sort()).toEqual(['a', 'c']);
    const third = p.claimGroup([ask({ gpus: 1 })], 'pack', { signal: signal() });
    expect(third).toBeInstanceOf(Promise);
    p.releaseGroup(g.groupId);
    expect(['a', 'c']).toContain((await third).members[0].machine);
  });

  it('members asking memory are judged by each machine’s own memory, not its bucket', () => {
    // one class (same cores and GPUs), memory differs: only c holds 48 GB
    const p = placer([spec('a', 8, 0, 16_000), spec('b', 8, 0, 32_000), spec('c', 8, 0, 64_000)]);
    const g = now(p, [ask({ cpus: 1, ramMb: 48_000 }), ask({ cpus: 1, ramMb: 20_000 })], 'strict_spread');
    expect(g.members.map((m) => m.machine)).toEqual(['c', 'b']);
    p.checkInvariants();
  });

  it('over seeded random clusters a group is granted at once exactly when some assignment of members fits', () => {
    const strategies: GroupStrategy[] = ['pack', 'spread', 'strict_pack', 'strict_spread'];
    let granted = 0;
    let waited = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = prng(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
      const n = int(1, 5);
      const specs = Array.from({ length: n }, (_, i) =>
        spec(`m${i}`, [4, 8][int(0, 1)], [0, 2, 4][int(0, 2)], rnd() < 0.3 ? [8_000, 16_000][int(0, 1)] : undefined),
      );
      const p = placer(specs);
      // load the machines with single claims so their free room differs (several buckets per class)
      for (let k = int(0, 6); k > 0; k--) {
        const stop = new AbortController();
        const c = p.claimOrWait(ask({ cpus: int(1, 3), gpus: int(0, 1) }), { signal: stop.signal });
        if (c instanceof Promise) {
          c.catch(() => {});
          stop.abort(new Error('no waiters here'));
        }
      }
      const free = p
        .snapshot()
        .machines.filter((m) => m.name !== 'engine')
        .map((m) => ({ cpus: m.free.cpus, gpus: m.free.gpus, ramMb: m.free.ramMb }));
      const members = Array.from({ length: int(1, 4) }, () =>
        ask({ cpus: int(1, 4), gpus: int(0, 2), ...(rnd() < 0.3 ? { ramMb: int(1, 12) * 1_000 } : {}) }),
      );
      const strategy = strategies[int(0, 3)];
      const expected = exhaustive(members, free, strategy);
      const ac = new AbortController();
      let g: ReturnType<Placer['claimGroup']>;
      try {
        g = p.claimGroup(members, strategy, { signal: ac.signal });
      } catch {
        expect(expected, `seed ${seed}: failed at once, yet a fit exists`).toBe(false);
        continue;
      }
      if (g instanceof Promise) {
        g.catch(() => {});
        ac.abort(new Error('done'));
        waited++;
      } else granted++;
      expect(!(g instanceof Promise), `seed ${seed}: ${strategy} ${JSON.stringify({ members, free })}`).toBe(expected);
      p.checkInvariants();
    }
    expect(granted).toBeGreaterThan(30);
    expect(waited).toBeGreaterThan(30);
  });
});

type Free = { cpus: number; gpus: number; ramMb?: number };

/** True when some assignment of `members` to machines with room `free` fits by `strategy` (every one tried). */
function exhaustive(members: NormalizedAsk[], free: Free[], strategy: GroupStrategy): boolean {
  const room = free.map((f) => ({ ...f }));
  const at: number[] = [];
  const go = (i: number): boolean => {
    if (i === members.length) return true;
    const a = members[i];
    for (let b = 0; b < room.length; b++) {
      if (strategy === 'strict_spread' && at.includes(b)) continue;
      if (strategy === 'strict_pack' && i > 0 && b !== at[0]) continue;
      const r = room[b];
      if (a.cpus > r.cpus || a.gpus > r.gpus || (a.ramMb && r.ramMb !== undefined && a.ramMb > r.ramMb)) continue;
      r.cpus -= a.cpus;
      r.gpus -= a.gpus;
      if (a.ramMb && r.ramMb !== undefined) r.ramMb -= a.ramMb;
      at.push(b);
      if (go(i + 1)) return true;
      at.pop();
      r.cpus += a.cpus;
      r.gpus += a.gpus;
      if (a.ramMb && r.ramMb !== undefined) r.ramMb += a.ramMb;
    }
    return false;
  };
  return go(0);
}
