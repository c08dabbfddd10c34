/**
 * One point of the placement grid (issue 9 item 4), run in a fresh process by
 * bench/placement.bench.ts: `node --import tsx bench/lib/placement-point.ts MACHINES WAITERS [mix]` (`mix`: the
 * mixed workload of issue 23, memory, named resources and GPU shares; placement-workload.ts).
 * Builds the fixed workload through Placer's public API only, queues the waiters, then times
 * claim+release cycles one by one (wall clock, in process, no gRPC). Prints one JSON line:
 * { machines, waiters, mix, ops, p50_us, p99_us, enqueue_ms, queued, timed_out, floor_p99_us, attach_us }.
 *
 * The workload is bench/lib/placement-workload.ts.
 * Env: BENCH_PLACEMENT_OPS (default 20000: p99 over at least 5,000 as issue 9 asks; more ops steady it),
 * BENCH_PLACEMENT_BUDGET_MS (default 20000: a point stops queueing or measuring past it and says so; used only to bound
 * runs of slow code).
 */
import { buildWorkload, cycle, now, quantile } from './placement-workload.js';

const [machines, waiters] = process.argv.slice(2, 4).map(Number);
const mix = process.argv[4] === 'mix';
const OPS = Number(process.env.BENCH_PLACEMENT_OPS ?? 20_000);
const BUDGET_MS = Number(process.env.BENCH_PLACEMENT_BUDGET_MS ?? 20_000);
const WARMUP = 2000; // past the JIT tiering of the claim path

const work = await buildWorkload(machines, waiters, BUDGET_MS, mix);
const { placer, queued, enqueueMs } = work;
let timedOut = work.timedOut;

// The floor: the same timed loop around an awaited no-op, so a reader can tell the machine's own
// jitter (a shared, loaded host) from placement's cost.
const floor: number[] = [];
for (let r = 0; r < WARMUP + OPS; r++) {
  const a = now();
  await Promise.resolve(r);
  if (r >= WARMUP) floor.push((now() - a) * 1000);
}
floor.sort((a, b) => a - b);

const samples: number[] = [];
if (!timedOut) {
  const start = now();
  for (let r = 0; r < WARMUP + OPS; r++) {
    samples.push(await cycle(placer, r, mix));
    if (now() - start > BUDGET_MS) {
      timedOut = true; // slow code: keep every op measured, warm-up included
      break;
    }
  }
}
if (!timedOut) samples.splice(0, WARMUP);
samples.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    machines,
    waiters,
    mix,
    ops: samples.length,
    p50_us: quantile(samples, 0.5),
    p99_us: quantile(samples, 0.99),
    enqueue_ms: timedOut && queued < waiters ? null : enqueueMs,
    queued,
    timed_out: timedOut,
    floor_p99_us: floor[Math.floor(0.99 * floor.length)],
    attach_us: work.attachUs,
  }),
);
process.exit(0);
