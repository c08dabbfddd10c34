/**
 * Preemption in process (issue 22 target; docs/rules.md Q2): the rate of ordinary claim+release on 1,000 machines
 * whose 8,000 GPUs are all held by batch claims, with urgent 1-GPU claims arriving at 5/s (each preempts one batch
 * claim, whose holder gives it back at once; the urgent claim is granted, released, and a batch claim takes the GPU
 * again) against the same loop without them, blocks interleaved, median of 3. Also the cost of one such preemption
 * cycle. Writes bench/results/preemption.json.
 * Run alone: `node bin/bench.js preemption`. Env: BENCH_PREEMPTION_BLOCK_MS (ms per block, default 1,000).
 */
import { EventBus } from '../src/events.js';
import { Placer } from '../src/placement/placer.js';
import type { NormalizedAsk } from '../src/placement/types.js';
import { benchAsk, median, report, type BenchRow } from './support.js';

const MACHINES = 1_000;
const BLOCK_MS = Number(process.env.BENCH_PREEMPTION_BLOCK_MS ?? 1_000);
const PREEMPTORS_PER_S = 5;
const signal = new AbortController().signal;
const ask = benchAsk;

const p = new Placer({
  engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false },
  events: new EventBus(),
  priorityClasses: { urgent: { value: 100 }, batch: { value: 0, default: true } },
  preemptionGraceMs: 3_600_000,
});
for (let i = 0; i < MACHINES; i++)
  p.attach({ name: `m${i}`, labels: [], inventory: { cpus: 32, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] }, remote: true });
const grantNow = (a: NormalizedAsk) => {
  const g = p.claimOrWait(a, { signal });
  if (g instanceof Promise) throw new Error('an ordinary claim waited');
  return g;
};
// every GPU held by a batch claim, each its own work (one node each: damping counts preemptions per work)
let batchNodes = 0;
const batch = () => ask({ cpus: 1, gpus: 1, node: `b${++batchNodes}` });
for (let i = 0; i < MACHINES * 8; i++) grantNow(batch());

let told: { victim: string; by: string } | undefined;
p.onPreempting = (n) => (told = { victim: n.victim, by: n.by });

/** One urgent arrival: it preempts a batch claim, whose holder gives it back; then all is as before. ms. */
function preemptionCycle(): number {
  const t0 = performance.now();
  const waited = p.claimOrWait(ask({ cpus: 1, gpus: 1, priorityClass: 'urgent' }), { signal });
  if (!(waited instanceof Promise) || !told) throw new Error('the urgent claim did not preempt');
  const { victim, by } = told;
  told = undefined;
  p.release(victim); // the holder gives it back in its grace: the urgent claim is granted
  if (!p.release(by)) throw new Error('the urgent claim was not granted');
  grantNow(batch()); // a batch claim takes the GPU again
  return performance.now() - t0;
}

/** Ordinary claim+release for BLOCK_MS, with preemption cycles at PREEMPTORS_PER_S or none; ops/s. */
function block(withPreemptors: boolean, cycles: number[]): number {
  const t0 = performance.now();
  const every = 1000 / PREEMPTORS_PER_S;
  let next = t0 + every / 2;
  let ops = 0;
  for (let now = t0; now - t0 < BLOCK_MS; now = performance.now()) {
    if (withPreemptors && now >= next) {
      cycles.push(preemptionCycle());
      next += every;
    }
    for (let i = 0; i < 100; i++) p.release(grantNow(ask({ cpus: 1 })).claimId);
    ops += 100;
  }
  return (ops / (performance.now() - t0)) * 1000;
}

const plain: number[] = [];
const mixed: number[] = [];
const cycles: number[] = [];
block(false, cycles); // warm-up
block(true, cycles);
cycles.length = 0;
for (let i = 0; i < 3; i++) {
  plain.push(block(false, cycles));
  mixed.push(block(true, cycles));
}
p.checkInvariants();
const ratio = median(mixed) / median(plain);
const rows: BenchRow[] = [
  { name: 'ordinary claim+release, no preemptors', value: median(plain), unit: '/s' },
  {
    name: `ordinary claim+release, preemptors at ${PREEMPTORS_PER_S}/s`,
    value: median(mixed),
    unit: '/s',
    ratio,
    target: '>= 90% of the rate without',
    met: ratio >= 0.9,
  },
  { name: 'one preemption cycle (8,000 held claims) p50', value: median(cycles) * 1000, unit: 'µs' },
  {
    name: 'one preemption cycle p99',
    value: [...cycles].sort((a, b) => a - b)[Math.floor(cycles.length * 0.99)] * 1000,
    unit: 'µs',
  },
];
report('preemption', `preemption at ${MACHINES} machines, every GPU held (ratio: with preemptors ÷ without)`, rows);
