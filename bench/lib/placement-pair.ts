/**
 * One growth pair of the placement grid (issue 9 targets), run in a fresh process by
 * bench/placement.bench.ts: `node --import tsx bench/lib/placement-pair.ts MACHINES WAITERS [mix|vs]`.
 * Builds the workload (placement-workload.ts) twice in this one process, at MACHINES and at
 * 10 × MACHINES machines with WAITERS waiting on each (`mix`: both the mixed workload of issue 23; `vs`: the plain
 * and the mixed workload both at MACHINES, so "growth" is mixed ÷ plain), then times claim+release on both side by side:
 * blocks of BLOCK ops alternate between the two, so a slow patch of the shared machine (a neighbour,
 * a JIT or frequency change; separate fresh processes differ by up to 2× in p50 here) falls on both.
 * Prints one JSON line: { machines, waiters, ops, p99_small_us, p99_big_us, growth }.
 * Env: BENCH_PLACEMENT_OPS (ops per size, default 20000), BENCH_PLACEMENT_BUDGET_MS (default 20000).
 */
import { buildWorkload, cycle, quantile } from './placement-workload.js';

const [machines, waiters] = process.argv.slice(2, 4).map(Number);
const mode = process.argv[4] ?? 'plain';
const mixBig = mode === 'mix' || mode === 'vs';
const OPS = Number(process.env.BENCH_PLACEMENT_OPS ?? 20_000);
const BUDGET_MS = Number(process.env.BENCH_PLACEMENT_BUDGET_MS ?? 20_000);
const WARMUP = 2000;
const BLOCK = 100;

const small = await buildWorkload(machines, waiters, BUDGET_MS, mode === 'mix');
const big = await buildWorkload(mode === 'vs' ? machines : machines * 10, waiters, BUDGET_MS, mixBig);
if (small.timedOut || big.timedOut) {
  console.log(JSON.stringify({ machines, waiters, mode, ops: 0, p99_small_us: null, p99_big_us: null, growth: null }));
  process.exit(0);
}
for (let r = 0; r < WARMUP; r++) {
  await cycle(small.placer, r, small.mix);
  await cycle(big.placer, r, big.mix);
}
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < OPS; r += BLOCK) {
  for (let i = r; i < r + BLOCK; i++) a.push(await cycle(small.placer, i, small.mix));
  for (let i = r; i < r + BLOCK; i++) b.push(await cycle(big.placer, i, big.mix));
}
a.sort((x, y) => x - y);
b.sort((x, y) => x - y);
const p99Small = quantile(a, 0.99)!;
const p99Big = quantile(b, 0.99)!;
console.log(
  JSON.stringify({
    machines,
    waiters,
    mode,
    ops: OPS,
    p99_small_us: p99Small,
    p99_big_us: p99Big,
    growth: p99Big / p99Small,
  }),
);
process.exit(0);
