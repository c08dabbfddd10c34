import { describe, expect, it } from 'vitest';
import type { PriorityClasses } from '../../src/placement/priority.js';
import type { TenantQuotas } from '../../src/placement/quota.js';
import type { LabelPolicy, MachineSpec } from '../../src/placement/types.js';
import { prng, Refereed } from '../support/placement-rules.js';

/** Worker shapes the sequences attach: mixed cores, GPUs, labels and memory. */
const SHAPES: Omit<MachineSpec, 'name' | 'remote'>[] = [
  { labels: [], inventory: { cpus: 4, gpuIds: [] } },
  { labels: ['gpu'], inventory: { cpus: 8, gpuIds: [0, 1] } },
  { labels: ['gpu'], inventory: { cpus: 16, gpuIds: [0, 1, 2, 3] } },
  { labels: ['big'], inventory: { cpus: 8, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] } },
  { labels: [], inventory: { cpus: 2, gpuIds: [], ramMb: 4096 } },
  { labels: ['big'], inventory: { cpus: 16, gpuIds: [], ramMb: 65_536 } },
];
const NAMES = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'];

/**
 * One random sequence of attach / detach / claim / release / disconnect / cancel, checked against
 * the rules after every event and every operation. Returns the violations (empty when all held).
 */
async function runSequence(
  seed: number,
  ops: number,
  priorities: readonly (number | string | undefined)[] = [undefined],
  classes?: PriorityClasses,
  quotas?: TenantQuotas,
  weights?: Record<string, number>,
) {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const engine: MachineSpec = { name: 'engine', labels: [], inventory: { cpus: 4, gpuIds: [0] }, remote: false };
  // a grace no sequence outlives: victims go when their holder gives them back (the `give back` operation)
  const r = new Refereed(engine, 1_000_000, { classes, preemptionGraceMs: 1_000_000_000, quotas, weights });
  const tenants = quotas ?? weights;
  const owners = tenants ? [...Object.keys(tenants), undefined] : [undefined];
  const attached = new Set<string>();
  const waiting = new Map<string, AbortController>();
  const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
  for (let i = 0; i < ops && r.violations.length === 0; i++) {
    const x = rnd();
    let what: string;
    if (x < 0.12 || attached.size === 0) {
      const name = pick(NAMES);
      const shape = pick(SHAPES);
      r.placer.attach({ name, ...shape, remote: true });
      attached.add(name);
      what = `attach ${name} ${shape.inventory.cpus}c/${shape.inventory.gpuIds.length}g ${shape.labels.join(',')}`;
    } else if (x < 0.2) {
      const name = pick([...attached]);
      r.placer.detach(name);
      attached.delete(name);
      what = `detach ${name}`;
    } else if (x < 0.6) {
      const ac = new AbortController();
      const label = pick(['', '', '', 'gpu', 'big', 'none']);
      const policy: LabelPolicy = rnd() < 0.5 ? 'require' : 'prefer';
      const p = pick(priorities);
      const a = {
        cpus: pick([0, 1, 1, 2, 4, 8, 16, 32]),
        gpus: pick([0, 0, 0, 1, 2, 4, 8]),
        ramMb: pick([undefined, undefined, undefined, 1024, 8192]),
        label,
        policy,
        runId: pick(['r1', 'r2', 'r3']),
        priority: typeof p === 'number' ? p : undefined,
        priorityClass: typeof p === 'string' ? p : undefined,
        owner: pick(owners),
      };
      const node = r.claim(a, ac.signal);
      waiting.set(node, ac);
      what =
        `claim ${node} ${a.cpus}c/${a.gpus}g${a.ramMb ? `/${a.ramMb}MB` : ''} ${policy} '${label}' ${a.runId}` +
        `${p === undefined ? '' : ` priority ${p}`}${a.owner === undefined ? '' : ` by ${a.owner}`}`;
    } else if (x < 0.7 && r.told().length) {
      const id = pick(r.told());
      const how = rnd();
      if (how < 0.25) {
        r.placer.release(id);
        what = `give back preempted ${id}`;
      } else if (how < 0.5) {
        const ac = new AbortController();
        r.resubmit(id, ac.signal); // the same work claimed again: damping counts it (SPEC Q2)
        waiting.set(`again ${id}`, ac);
        what = `give back preempted ${id} and claim the same work again`;
      } else {
        const ac = new AbortController(); // a later disconnect abandons its new wait
        r.makeRoom(id, ac.signal);
        waiting.set(`requeued ${id}`, ac);
        what = `make room: ${id} waits again at its place`;
      }
    } else if (x < 0.8) {
      const held = r.held();
      const id = held.length ? pick(held) : 'c0';
      r.placer.release(id);
      what = `release ${id}`;
    } else if (x < 0.95) {
      const node = waiting.size ? pick([...waiting.keys()]) : '';
      waiting.get(node)?.abort(new Error('client went away'));
      waiting.delete(node);
      what = `disconnect ${node}`;
    } else {
      const run = pick(['r1', 'r2', 'r3']);
      r.placer.cancelRun(run);
      what = `cancel ${run}`;
    }
    await tick();
    if (process.env.BERTH_PLACEMENT_TRACE) console.log(i, what, r.violations.length);
    r.checkSettled(`seed ${seed} op ${i} (${what})`);
  }
  return r;
}

// BERTH_PLACEMENT_SEED=<seed> replays one sequence, BERTH_PLACEMENT_TRACE=1 prints its operations, and
// BERTH_PLACEMENT_TRIALS=<n> runs n preemption sequences instead of 250.
describe('placement rules hold under random sequences (SPEC P2–P8, P11; issue 9)', () => {
  it('random attach/detach/claim/release/disconnect/cancel sequences never break a rule', async () => {
    const only = process.env.BERTH_PLACEMENT_SEED;
    const seeds = only ? [Number(only)] : Array.from({ length: 20 }, (_, i) => i + 1);
    for (const seed of seeds) {
      // Reproduce one failing sequence with BERTH_PLACEMENT_SEED=<seed>.
      expect((await runSequence(seed, 200)).violations, `seed ${seed}`).toEqual([]);
    }
  });

  it('with five priorities mixed in, every grant leaves room for the waiters ahead of it and none is left waiting (SPEC Q1)', async () => {
    const only = process.env.BERTH_PLACEMENT_SEED;
    const seeds = only ? [Number(only)] : Array.from({ length: 40 }, (_, i) => 1000 + i);
    for (const seed of seeds) {
      expect((await runSequence(seed, 200, [undefined, 0, 1, 2, -1, 5])).violations, `seed ${seed}`).toEqual([]);
    }
  });

  it('with classes that preempt, every preemption is by a preempting class of a strictly lower claim, once per grant, on one machine, and a victim that makes room waits again at its place (SPEC Q2)', async () => {
    const only = process.env.BERTH_PLACEMENT_SEED;
    const seeds = only
      ? [Number(only)]
      : Array.from({ length: Number(process.env.BERTH_PLACEMENT_TRIALS ?? 250) }, (_, i) => 2000 + i);
    const classes: PriorityClasses = {
      urgent: { value: 5 },
      high: { value: 2 },
      steady: { value: 3, preemption: 'never' },
      sweep: { value: -1 },
    };
    let told = 0;
    let requeues = 0;
    for (const seed of seeds) {
      const prios = [undefined, 0, 1, 'urgent', 'high', 'steady', 'sweep', 'sweep'];
      const r = await runSequence(seed, 200, prios, classes);
      expect(r.violations, `seed ${seed}`).toEqual([]);
      told += r.preempted.size;
      requeues += r.requeues;
    }
    if (process.env.BERTH_PLACEMENT_TRACE) console.log(`preemptions told: ${told}, requeued: ${requeues}`);
    expect(told).toBeGreaterThan(seeds.length); // the sequences do preempt
    if (!process.env.BERTH_PLACEMENT_SEED) expect(requeues).toBeGreaterThan(seeds.length / 4); // and requeue victims
  });

  it('with three tenants under quotas (two in a cohort) and priorities, no tenant nor cohort ever holds more than its quota allows, only quota holds a waiter that capacity would not, and reclaims take only what was lent (SPEC Q3)', async () => {
    const only = process.env.BERTH_PLACEMENT_SEED;
    const seeds = only
      ? [Number(only)]
      : Array.from({ length: Number(process.env.BERTH_PLACEMENT_TRIALS ?? 250) }, (_, i) => 3000 + i);
    const u = 10_000; // units of 1e-4
    const quotas: TenantQuotas = {
      a: { cohort: 'lab', nominal: { gpus: 4 * u, cpus: 16 * u }, borrowingLimit: { gpus: 4 * u } },
      b: { cohort: 'lab', nominal: { gpus: 2 * u }, lendingLimit: { gpus: 1 * u } },
      c: { nominal: { cpus: 8 * u, ram_mb: 8192 * u } },
    };
    const classes: PriorityClasses = { urgent: { value: 5 }, sweep: { value: -1 } };
    let holds = 0;
    let reclaims = 0;
    for (const seed of seeds) {
      const r = await runSequence(seed, 200, [undefined, 0, 2, 'urgent', 'sweep'], classes, quotas);
      expect(r.violations, `seed ${seed}`).toEqual([]);
      holds += r.quotaHolds;
      reclaims += r.reclaims;
    }
    if (process.env.BERTH_PLACEMENT_TRACE) console.log(`waiters held by quota: ${holds}, reclaimed: ${reclaims}`);
    expect(holds).toBeGreaterThan(seeds.length); // the sequences do meet their quotas
    expect(reclaims).toBeGreaterThan(0); // and take back what the cohort lent
  });

  it('with three weighted tenants and priorities, every grant leaves room for the waiters ahead of it by priority, then share, then arrival, and none is left waiting (SPEC Q1)', async () => {
    const only = process.env.BERTH_PLACEMENT_SEED;
    const seeds = only
      ? [Number(only)]
      : Array.from({ length: Number(process.env.BERTH_PLACEMENT_TRIALS ?? 60) }, (_, i) => 4000 + i);
    const weights = { a: 1, b: 2, c: 0.5 };
    let decided = 0;
    for (const seed of seeds) {
      const r = await runSequence(seed, 200, [undefined, 0, 2], undefined, undefined, weights);
      expect(r.violations, `seed ${seed}`).toEqual([]);
      decided += r.shareDecided;
    }
    expect(decided).toBeGreaterThan(seeds.length); // shares, not arrival, did decide the order
  });
});
