/**
 * Gang claims in process (issue 21 targets; docs/rules.md G1, G2): group grant+release p50/p99 at 1,000 machines for
 * 1 and 40 members (PACK and STRICT_SPREAD), and groups/s of 4 members granted and released back to back by one
 * caller; a single claim+release at the same 1,000 machines side by side as the base of the ratios. Each figure is
 * the median over 3 blocks, the blocks of every case interleaved. Writes bench/results/groups.json.
 * Run alone: `node bin/bench.js groups`. Env: BENCH_GROUPS_OPS (ops per block, default 2,000).
 */
import { EventBus } from '../src/events.js';
import type { GroupStrategy } from '../src/placement/group-fit.js';
import { Placer } from '../src/placement/placer.js';
import { benchAsk, median, report, type BenchRow } from './support.js';

const MACHINES = 1_000;
const OPS = Number(process.env.BENCH_GROUPS_OPS ?? 2_000);
const signal = new AbortController().signal;
const ask = benchAsk;

function cluster(): Placer {
  const p = new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false },
    events: new EventBus(),
  });
  for (let i = 0; i < MACHINES; i++)
    p.attach({ name: `m${i}`, labels: [], inventory: { cpus: 32, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] }, remote: true });
  return p;
}

interface Case {
  name: string;
  op: (p: Placer) => void;
}

const group = (n: number, strategy: GroupStrategy) => (p: Placer) => {
  const g = p.claimGroup(
    Array.from({ length: n }, () => ask({ cpus: 4, gpus: 1 })),
    strategy,
    { signal },
  );
  if (g instanceof Promise) throw new Error('a group waited on an idle cluster');
  p.releaseGroup(g.groupId);
};
const cases: Case[] = [
  {
    name: 'single claim+release',
    op: (p) => {
      const g = p.claimOrWait(ask({ cpus: 4, gpus: 1 }), { signal });
      if (g instanceof Promise) throw new Error('a claim waited');
      p.release(g.claimId);
    },
  },
  { name: 'group of 1 grant+release', op: group(1, 'pack') },
  { name: 'group of 4 grant+release', op: group(4, 'pack') },
  { name: 'group of 40 PACK grant+release', op: group(40, 'pack') },
  { name: 'group of 40 STRICT_SPREAD grant+release', op: group(40, 'strict_spread') },
];

const p = cluster();
const samples = new Map<string, { p50: number[]; p99: number[]; perS: number[] }>();
for (let block = 0; block < 3; block++) {
  for (const c of cases) {
    const times = new Float64Array(OPS);
    const t0 = performance.now();
    for (let i = 0; i < OPS; i++) {
      const s = performance.now();
      c.op(p);
      times[i] = performance.now() - s;
    }
    const total = performance.now() - t0;
    times.sort();
    const s = samples.get(c.name) ?? { p50: [], p99: [], perS: [] };
    s.p50.push(times[Math.floor(OPS * 0.5)] * 1000);
    s.p99.push(times[Math.floor(OPS * 0.99)] * 1000);
    s.perS.push((OPS / total) * 1000);
    samples.set(c.name, s);
  }
}
p.checkInvariants();
const base = median(samples.get('single claim+release')!.p99);
const rows: BenchRow[] = [];
for (const c of cases) {
  const s = samples.get(c.name)!;
  const p99 = median(s.p99);
  const target = c.name === 'group of 1 grant+release' ? 1000 : c.name.includes('of 40') ? 5000 : undefined;
  rows.push({ name: `${c.name} p50`, value: median(s.p50), unit: 'µs' });
  rows.push({
    name: `${c.name} p99`,
    value: p99,
    unit: 'µs',
    ratio: p99 / base,
    ...(target ? { target: `< ${target / 1000} ms`, met: p99 < target } : {}),
  });
  if (c.name === 'group of 4 grant+release')
    rows.push({
      name: 'groups of 4 per second, one caller',
      value: median(s.perS),
      unit: '/s',
      ratio: median(s.perS) / median(samples.get('single claim+release')!.perS),
      target: '>= 5,000/s',
      met: median(s.perS) >= 5000,
    });
}
report('groups', `gang claims at ${MACHINES} machines (ratios: p99 against a single claim+release)`, rows);
