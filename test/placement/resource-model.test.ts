/**
 * One resource model (issue 23 items 1–2) through the placer: named per-machine resources, cluster-wide pools and
 * memory each keep every rule — fit, fixed-point quantities (1e-4), clamping (named last), reservations and the
 * wake-up index (a release wakes only waiters it could serve), the Queued detail, Satisfiable, the snapshot — and
 * an ask with memory goes where it fits tightest. The books' invariants are checked after every event.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Policy, type Ask } from '../../generated/ts/berth/v1/resources.js';
import type { BerthError } from '../../src/errors.js';
import { EventBus } from '../../src/events.js';
import { normalizeAsk } from '../../src/placement/ask.js';
import { Placer } from '../../src/placement/placer.js';
import type { Grant, MachineSpec, NormalizedAsk, QueuedInfo } from '../../src/placement/types.js';
import { UNIT } from '../../src/resources/quantity.js';

const wire = (a: Partial<Ask>): Ask => ({
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
const ask = (a: Partial<Ask>): NormalizedAsk => normalizeAsk(wire(a));
const worker = (name: string, cpus: number, extra: Partial<MachineSpec['inventory']> = {}): MachineSpec => ({
  name,
  labels: [],
  remote: true,
  inventory: { cpus, gpuIds: [], ...extra },
});

let placers: Placer[] = [];
afterEach(() => {
  placers = [];
});

/**
 * A placer: an engine of `engineCpus` cores, `pools` (plain numbers), invariants checked after every event
 * (or, with `everyEvent` false, only when the test calls checkInvariants: the check walks every claim).
 */
function placer(engineCpus = 0, pools: Record<string, number> = {}, everyEvent = true) {
  const events = new EventBus();
  const broken: string[] = [];
  let n = 0;
  const units = Object.fromEntries(Object.entries(pools).map(([k, v]) => [k, v * UNIT]));
  const p = new Placer({
    engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: engineCpus, gpuIds: [] } },
    events,
    pools: units,
    newClaimId: () => `c${++n}`,
  });
  events.subscribe((e) => {
    if (!everyEvent) return;
    try {
      p.checkInvariants();
    } catch (err) {
      broken.push(`after ${e.kind}: ${(err as Error).message}`);
    }
  });
  placers.push(p);
  const queued: QueuedInfo[] = [];
  const claim = (a: NormalizedAsk, signal = new AbortController().signal) =>
    p.claim(a, { signal, onQueued: (q) => queued.push(q) });
  return { p, claim, queued, broken };
}

const settled = async (x: Promise<Grant>) => {
  let g: Grant | undefined;
  void x.then((v) => (g = v));
  await new Promise((r) => setImmediate(r));
  return g;
};

describe('named per-machine resources', () => {
  it('a trainer ask lands on the machine with one; a second waits, woken only by a trainer release', async () => {
    const { p, claim, queued, broken } = placer();
    p.attach(worker('plain', 8));
    p.attach(worker('gpu-box', 8, { resources: { trainer: 1 * UNIT } }));
    const first = await claim(ask({ cpus: 1, resources: { trainer: 1 } }));
    expect(first.machine).toBe('gpu-box');
    expect(first.allocation.resources).toEqual({ trainer: UNIT });
    const second = claim(ask({ cpus: 1, resources: { trainer: 1 } }));
    expect(await settled(second)).toBeUndefined();
    expect(queued.at(-1)?.detail).toContain('waiting for trainer: 0 of 1 free');
    // a release of cores elsewhere wakes nobody asking trainer
    const other = await claim(ask({ cpus: 8 }));
    expect(other.machine).toBe('plain');
    p.release(other.claimId);
    expect(await settled(second)).toBeUndefined();
    p.release(first.claimId);
    const g = await second;
    expect(g.machine).toBe('gpu-box');
    expect(broken).toEqual([]);
  });

  it('fixed-point: 4 × 0.25 fill one exactly, 10,000 × 0.0001 fill one; the next waits', async () => {
    const { p, claim, broken } = placer();
    p.attach(worker('a', 20_000, { resources: { slice: UNIT } }));
    const quarters = await Promise.all([1, 2, 3, 4].map(() => claim(ask({ cpus: 0, resources: { slice: 0.25 } }))));
    expect(quarters.every((g) => g.machine === 'a')).toBe(true);
    expect(await settled(claim(ask({ cpus: 0, resources: { slice: 0.25 } })))).toBeUndefined();
    // 10,000 holders: the books are checked at the end, not after each of the 10,000 grants
    const { p: p2, claim: claim2 } = placer(0, {}, false);
    p2.attach(worker('b', 1, { resources: { slice: UNIT } }));
    for (let i = 0; i < 10_000; i++) await claim2(ask({ cpus: 0, resources: { slice: 0.0001 } }));
    const next = claim2(ask({ cpus: 0, resources: { slice: 0.0001 } }));
    expect(await settled(next)).toBeUndefined();
    expect(p2.snapshot().machines.find((m) => m.name === 'b')?.free.res).toEqual({ slice: 0 });
    p2.checkInvariants();
    expect(broken).toEqual([]);
  });

  it('an ask finer than 0.0001 is INVALID_ARGUMENT naming ask.resources.<name>', () => {
    expect(() => ask({ resources: { trainer: 0.00005 } })).toThrow(/ask\.resources\.trainer: .*steps of 0\.0001/);
    expect(() => ask({ resources: { 'bad name': 1 } })).toThrow(/ask\.resources\.bad name/);
    try {
      ask({ resources: { trainer: -1 } });
    } catch (err) {
      expect((err as BerthError).kind).toBe('invalid_argument');
    }
  });

  it('more than any machine has is clamped to the best machine, named resources last (SPEC P5)', async () => {
    const { p, claim } = placer();
    p.attach(worker('a', 4, { resources: { nic: 2 * UNIT } }));
    const g = await claim(ask({ cpus: 2, resources: { nic: 3 } }));
    expect(g.clamped).toBe(true);
    expect(g.allocation.resources).toEqual({ nic: 2 * UNIT });
    await expect(claim(ask({ cpus: 2, resources: { nic: 3 }, onOversize: 2 }))).rejects.toThrow(/on_oversize is fail/);
  });

  it('a name nothing has fails at once (FAILED_PRECONDITION naming it); Satisfiable: impossible', async () => {
    const { p, claim } = placer(4);
    await expect(claim(ask({ resources: { dongle: 1 } }))).rejects.toThrow(
      /ask\.resources\.dongle: no machine has 'dongle'/,
    );
    expect(p.verdict(ask({ resources: { dongle: 1 } }))).toMatchObject({
      verdict: 'impossible',
      limiting: 'resources.dongle',
    });
  });

  it('a reservation holds back the named resource for the older waiter (SPEC P7)', async () => {
    const { p, claim, broken } = placer();
    p.attach(worker('a', 8, { resources: { trainer: 2 * UNIT } }));
    const held = await claim(ask({ cpus: 1, resources: { trainer: 1 } }));
    const big = claim(ask({ cpus: 1, resources: { trainer: 2 } })); // waits for both
    expect(await settled(big)).toBeUndefined();
    // a younger small ask would fit the one free trainer, but it is held back for the older waiter
    const small = claim(ask({ cpus: 1, resources: { trainer: 1 } }));
    expect(await settled(small)).toBeUndefined();
    p.release(held.claimId);
    expect((await big).allocation.resources).toEqual({ trainer: 2 * UNIT });
    expect(await settled(small)).toBeUndefined();
    expect(broken).toEqual([]);
  });
});

describe('cluster-wide pools', () => {
  it('a license is taken atomically with the machine, waits with "0 of N free" and comes back on release', async () => {
    const { p, claim, queued, broken } = placer(0, { 'license/matlab': 2 });
    p.attach(worker('a', 8));
    const a = await claim(ask({ cpus: 1, resources: { 'license/matlab': 1 } }));
    const b = await claim(ask({ cpus: 1, resources: { 'license/matlab': 1 } }));
    expect(a.allocation.resources).toEqual({ 'license/matlab': UNIT });
    expect(p.snapshot().pools).toEqual([{ name: 'license/matlab', total: 2 * UNIT, free: 0 }]);
    const c = claim(ask({ cpus: 1, resources: { 'license/matlab': 1 } }));
    expect(await settled(c)).toBeUndefined();
    expect(queued.at(-1)?.detail).toContain('waiting for license/matlab: 0 of 2 free');
    expect(p.verdict(ask({ cpus: 1, resources: { 'license/matlab': 1 } })).verdict).toBe('waits');
    // cores free up elsewhere: no license, no grant
    const plain = await claim(ask({ cpus: 2 }));
    p.release(plain.claimId);
    expect(await settled(c)).toBeUndefined();
    p.release(b.claimId);
    expect((await c).machine).toBe('a');
    expect(broken).toEqual([]);
  });

  it('a license is not taken while the machine part waits; a younger ask does not overtake', async () => {
    const { p, claim, broken } = placer(0, { lic: 1 });
    p.attach(worker('a', 2));
    const cores = await claim(ask({ cpus: 2 }));
    const old = claim(ask({ cpus: 2, resources: { lic: 1 } })); // license free, cores not
    expect(await settled(old)).toBeUndefined();
    expect(p.snapshot().pools[0].free).toBe(UNIT); // nothing taken while it waits
    const young = claim(ask({ cpus: 0, resources: { lic: 1 } })); // would fit now, but the license is reserved
    expect(await settled(young)).toBeUndefined();
    p.release(cores.claimId);
    const g = await old;
    expect(g.allocation.resources).toEqual({ lic: UNIT });
    expect(await settled(young)).toBeUndefined();
    p.release(g.claimId);
    expect((await young).allocation.resources).toEqual({ lic: UNIT });
    expect(broken).toEqual([]);
  });

  it('a license lost with its machine comes back to the pool', async () => {
    const { p, claim, broken } = placer(0, { lic: 1 });
    p.attach(worker('a', 2));
    await claim(ask({ cpus: 1, resources: { lic: 1 } }));
    p.detach('a');
    expect(p.snapshot().pools[0].free).toBe(UNIT);
    expect(broken).toEqual([]);
  });

  it('a claim restored from the journal takes back exactly its trainer and its license (SPEC S4)', async () => {
    const { p, claim, broken } = placer(0, { lic: 1 });
    p.attach(worker('a', 4, { resources: { trainer: UNIT } }));
    const g = await claim(ask({ cpus: 1, resources: { trainer: 1, lic: 1 } }));
    const { p: again, broken: broken2 } = placer(0, { lic: 1 });
    again.attach(worker('a', 4, { resources: { trainer: UNIT } }));
    again.restoreClaim({ claimId: g.claimId, machine: 'a', allocation: g.allocation, ask: g.ask });
    const s = again.snapshot();
    expect(s.pools[0].free).toBe(0);
    expect(s.machines.find((m) => m.name === 'a')?.free.res).toEqual({ trainer: 0 });
    expect(() => again.restoreClaim({ claimId: 'other', machine: 'a', allocation: g.allocation, ask: g.ask })).toThrow(
      /cannot be restored/,
    );
    expect(again.snapshot().pools[0].free).toBe(0);
    expect([...broken, ...broken2]).toEqual([]);
  });

  it('more of a pool than it holds fails at once', async () => {
    const { claim } = placer(4, { lic: 3 });
    await expect(claim(ask({ resources: { lic: 4 } }))).rejects.toThrow(
      /ask\.resources\.lic: asked 4 but pool lic holds 3/,
    );
  });
});

describe('memory places (issue 23 item 2)', () => {
  it('small asks fill the memory-poor machine, so a memory-heavy ask finds the memory-rich one free', async () => {
    const { p, claim, broken } = placer();
    p.attach(worker('rich', 4, { ramMb: 65_536 }));
    p.attach(worker('poor', 4, { ramMb: 8_192 }));
    const small = await Promise.all([1, 2, 3, 4].map(() => claim(ask({ cpus: 1, ramMb: 1024 }))));
    expect(small.map((g) => g.machine)).toEqual(['poor', 'poor', 'poor', 'poor']);
    const heavy = await claim(ask({ cpus: 1, ramMb: 40_960 }));
    expect(heavy.machine).toBe('rich');
    expect(broken).toEqual([]);
  });

  it('a memory-heavy ask waits ("waiting for 40960 MB ram"), woken by a memory release', async () => {
    const { p, claim, queued, broken } = placer();
    p.attach(worker('a', 8, { ramMb: 65_536 }));
    const hog = await claim(ask({ cpus: 1, ramMb: 40_000 }));
    const heavy = claim(ask({ cpus: 1, ramMb: 40_960 }));
    expect(await settled(heavy)).toBeUndefined();
    expect(queued.at(-1)?.detail).toContain('waiting for 40960 MB ram');
    const cores = await claim(ask({ cpus: 2 })); // cores come and go: the ask still waits for memory
    p.release(cores.claimId);
    expect(await settled(heavy)).toBeUndefined();
    p.release(hog.claimId);
    expect((await heavy).machine).toBe('a');
    expect(broken).toEqual([]);
  });

  it('100 concurrent 16 GB asks on a 64 GB machine grant exactly 4', async () => {
    const { p, claim, broken } = placer();
    p.attach(worker('a', 128, { ramMb: 65_536 }));
    const all = Array.from({ length: 100 }, () => claim(ask({ cpus: 1, ramMb: 16_384 })));
    const got = await Promise.all(all.map(settled));
    expect(got.filter(Boolean)).toHaveLength(4);
    expect(broken).toEqual([]);
  });
});
