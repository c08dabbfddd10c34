/**
 * The placement grid (issue 9 item 4; SPEC P7, P12): claim+release p50/p99 at 10, 100, 1k, 10k
 * machines × 0, 10, 100, 1,000 waiters, the time to queue the waiters, and the growth of p99 per
 * ×10 machines. Each point runs in 3 fresh processes (bench/lib/placement-point.ts), the grid
 * walked 3 times round; the table shows the median of each figure. The growth target is judged side
 * by side: each pair (M and 10 × M machines, same waiters) runs in one process that alternates blocks
 * of ops between the two (bench/lib/placement-pair.ts), median over 3 processes; fresh processes alone
 * differ by up to 2× in p50 on this shared machine, so the ratio of two table cells is printed only as a
 * reading.
 *
 * Issue 23 item 5: the same grid runs again on the mixed workload (every other machine memory-limited, a quarter of
 * the asks carrying memory, a named resource or a GPU share; bench/lib/placement-workload.ts), with its own growth
 * pairs, and each size is paired with the plain grid side by side in one process (mixed ÷ plain p99, the target
 * "unchanged within noise"). Then the next scale: 100,000 machines with 10,000 waiting, plain and mixed (p99 < 100 µs,
 * queueing the 10,000 < 1 s, attach cost per machine printed).
 * Writes bench/results/placement.json (one row per point: machines, waiters, mix, ops, p50_us, p99_us, enqueue_ms,
 * attach_us; the growth and mixed ÷ plain pairs; the scale points).
 * Run alone: `node bin/bench.js placement` or `make bench-placement`.
 * Env: BENCH_PLACEMENT_RUNS (default 3), BENCH_PLACEMENT_MACHINES / _WAITERS (comma lists) to run
 * part of the grid; BENCH_PLACEMENT_OPS and BENCH_PLACEMENT_BUDGET_MS pass to each point; BENCH_PLACEMENT_MIX=0
 * skips the mixed grid, BENCH_PLACEMENT_SCALE=0 the 100,000-machine point.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Point {
  machines: number;
  waiters: number;
  mix: boolean;
  ops: number;
  p50_us: number | null;
  p99_us: number | null;
  enqueue_ms: number | null;
  queued: number;
  timed_out: boolean;
  floor_p99_us: number;
  attach_us: number;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const list = (env: string | undefined, dflt: number[]) => (env ? env.split(',').map(Number) : dflt);
const MACHINES = list(process.env.BENCH_PLACEMENT_MACHINES, [10, 100, 1_000, 10_000]);
const WAITERS = list(process.env.BENCH_PLACEMENT_WAITERS, [0, 10, 100, 1_000]);
const RUNS = Number(process.env.BENCH_PLACEMENT_RUNS ?? 3);
const MIXES = process.env.BENCH_PLACEMENT_MIX === '0' ? [false] : [false, true];
const SCALE = process.env.BENCH_PLACEMENT_SCALE !== '0';
const label = (mix: boolean) => (mix ? 'mixed' : 'plain');

/** Runs `script` (bench/lib) in a fresh process and parses its last line of JSON. */
function runLib<T>(script: string, args: (string | number)[]): T {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/lib', script), ...args.map(String)],
    {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as T;
}
const runPoint = (machines: number, waiters: number, mix: boolean) =>
  runLib<Point>('placement-point.ts', [machines, waiters, ...(mix ? ['mix'] : [])]);

interface Pair {
  machines: number;
  waiters: number;
  mode: string;
  ops: number;
  p99_small_us: number | null;
  p99_big_us: number | null;
  growth: number | null;
}

const runPair = (machines: number, waiters: number, mode: 'plain' | 'mix' | 'vs') =>
  runLib<Pair>('placement-pair.ts', [machines, waiters, mode]);

function median(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : null;
}

/** The median of each figure over fresh processes of one point. */
function summarize(done: Point[]): Point {
  const p = done[0];
  return {
    machines: p.machines,
    waiters: p.waiters,
    mix: p.mix,
    ops: Math.min(...done.map((p) => p.ops)),
    p50_us: median(done.map((p) => p.p50_us)),
    p99_us: median(done.map((p) => p.p99_us)),
    enqueue_ms: median(done.map((p) => p.enqueue_ms)),
    queued: Math.min(...done.map((p) => p.queued)),
    timed_out: done.some((p) => p.timed_out),
    floor_p99_us: median(done.map((p) => p.floor_p99_us))!,
    attach_us: median(done.map((p) => p.attach_us))!,
  };
}

const load0 = os.loadavg()[0];
const rows: Point[] = [];
const floors: number[] = [];
// Runs go round the whole grid RUNS times (not RUNS in a row per point), so every point sees the
// same spread of machine load; a point that hit its time budget once is not run again.
const runs = new Map<string, Point[]>();
for (let r = 0; r < RUNS; r++) {
  for (const mix of MIXES) {
    for (const m of MACHINES) {
      for (const w of WAITERS) {
        const key = `${m}/${w}/${mix}`;
        const done = runs.get(key) ?? [];
        if (done.some((p) => p.timed_out)) continue;
        const p = runPoint(m, w, mix);
        done.push(p);
        floors.push(p.floor_p99_us);
        runs.set(key, done);
        process.stderr.write(
          `  run ${r + 1} (${label(mix)}): ${m} machines × ${w} waiters: ` +
            `p99 ${fmtUs(p.p99_us)}${p.timed_out ? ' (time budget hit)' : ''}\n`,
        );
      }
    }
  }
}
for (const mix of MIXES)
  for (const m of MACHINES) for (const w of WAITERS) rows.push(summarize(runs.get(`${m}/${w}/${mix}`)!));

function fmtUs(us: number | null): string {
  if (us === null) return '—';
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${us.toFixed(1)} µs`;
}
const fmtMs = (ms: number | null) =>
  ms === null ? '—' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
const at = (m: number, w: number, mix = false) =>
  rows.find((r) => r.machines === m && r.waiters === w && r.mix === mix);

console.log(
  `claim+release, in process (${os.availableParallelism()} cores, node ${process.version}), ` +
    `median of ${RUNS} fresh processes`,
);
console.log(
  `load average ${load0.toFixed(1)} at the start; ` +
    `the timed loop around an awaited no-op` +
    ` (the machine's own jitter) has p99 ${fmtUs(median(floors))} (median over points)`,
);
for (const mix of MIXES) {
  console.log(
    `\n${label(mix)} workload${mix ? ' (issue 23: memory, named resources, GPU shares)' : ''}: ` +
      'p50 / p99 per claim+release; [n] = ops measured when a point hit its time budget',
  );
  console.log(['machines'.padStart(8), ...WAITERS.map((w) => `${w} waiting`.padStart(22))].join(' │ '));
  for (const m of MACHINES) {
    const cells = WAITERS.map((w) => {
      const r = at(m, w, mix)!;
      const s =
        r.enqueue_ms === null && w > 0 ? `queue > budget (${r.queued})` : `${fmtUs(r.p50_us)} / ${fmtUs(r.p99_us)}`;
      return (r.timed_out && r.enqueue_ms !== null ? `${s} [${r.ops}]` : s).padStart(22);
    });
    console.log([String(m).padStart(8), ...cells].join(' │ '));
  }
  console.log(`time to queue the waiters (${label(mix)}); attach µs per machine`);
  console.log(
    [
      'machines'.padStart(8),
      ...WAITERS.filter((w) => w > 0).map((w) => `${w} waiters`.padStart(14)),
      'attach'.padStart(10),
    ].join(' │ '),
  );
  for (const m of MACHINES) {
    console.log(
      [
        String(m).padStart(8),
        ...WAITERS.filter((w) => w > 0).map((w) => {
          const r = at(m, w, mix)!;
          return (r.enqueue_ms === null ? `> budget (${r.queued})` : fmtMs(r.enqueue_ms)).padStart(14);
        }),
        fmtUs(at(m, WAITERS[0], mix)!.attach_us).padStart(10),
      ].join(' │ '),
    );
  }
}
// Side by side, RUNS fresh processes each, round the pairs: growth per ×10 machines (pairs whose 10 × M is also
// on the grid) for each workload, then mixed ÷ plain at each size with the most waiters.
const pairRuns = new Map<string, Pair[]>();
const pairKey = (m: number, w: number, mode: string) => `${m}/${w}/${mode}`;
for (let r = 0; r < RUNS; r++) {
  for (const mix of MIXES) {
    for (const m of MACHINES.filter((m) => MACHINES.includes(m * 10))) {
      for (const w of WAITERS) {
        if (at(m, w, mix)?.timed_out || at(m * 10, w, mix)?.timed_out) continue;
        const mode = mix ? 'mix' : 'plain';
        const p = runPair(m, w, mode);
        pairRuns.set(pairKey(m, w, mode), [...(pairRuns.get(pairKey(m, w, mode)) ?? []), p]);
        process.stderr.write(
          `  pair run ${r + 1} (${label(mix)}): ${m}→${m * 10} machines × ${w} waiters: ` +
            `growth ${p.growth?.toFixed(2) ?? '—'}×\n`,
        );
      }
    }
  }
  if (MIXES.length < 2) continue;
  const w = Math.max(...WAITERS);
  for (const m of MACHINES) {
    const p = runPair(m, w, 'vs');
    pairRuns.set(pairKey(m, w, 'vs'), [...(pairRuns.get(pairKey(m, w, 'vs')) ?? []), p]);
    process.stderr.write(`  pair run ${r + 1}: ${m} machines × ${w} waiters: mixed ÷ plain ${p.growth?.toFixed(2)}×\n`);
  }
}
const pairs = [...pairRuns].map(([key, ps]) => {
  const [m, w, mode] = key.split('/');
  const machines = Number(m);
  return {
    machines,
    to: mode === 'vs' ? machines : machines * 10,
    waiters: Number(w),
    mode,
    growth: median(ps.map((p) => p.growth)),
    p99_small_us: median(ps.map((p) => p.p99_small_us)),
    p99_big_us: median(ps.map((p) => p.p99_big_us)),
  };
});
const growth = pairs.filter((g) => g.mode !== 'vs');
for (const mode of MIXES.map((mix) => (mix ? 'mix' : 'plain'))) {
  console.log(
    `\ngrowth of p99 per ×10 machines (${mode === 'mix' ? 'mixed' : 'plain'}), side by side in one process, ` +
      'median of pairs (target ≤ 1.5×)',
  );
  for (const w of WAITERS) {
    const cells = growth
      .filter((g) => g.waiters === w && g.mode === mode)
      .map((g) => `${g.machines}→${g.to}: ${g.growth === null ? '—' : `${g.growth.toFixed(2)}×`}`);
    console.log(`  ${String(w).padStart(4)} waiting   ${cells.join('   ')}`);
  }
  const worst = Math.max(...growth.filter((g) => g.mode === mode).map((g) => g.growth ?? 0));
  console.log(`  worst ${worst.toFixed(2)}× (target ≤ 1.5×: ${worst <= 1.5 ? 'met' : 'NOT met'})`);
}
const vs = pairs.filter((g) => g.mode === 'vs');
if (vs.length) {
  console.log(
    `\nmixed ÷ plain p99, side by side in one process at ${Math.max(...WAITERS)} waiting, median of pairs ` +
      `(target: unchanged within noise; the floor's p99 is ${fmtUs(median(floors))})`,
  );
  for (const g of vs) {
    console.log(
      `  ${String(g.machines).padStart(6)} machines: plain ${fmtUs(g.p99_small_us)}, mixed ${fmtUs(g.p99_big_us)}: ` +
        `${g.growth?.toFixed(2) ?? '—'}×`,
    );
  }
}
console.log('\nthe same ratios read off the plain table above (separate processes; a reading, not the target)');
for (const w of WAITERS) {
  const ratios = MACHINES.slice(1).map((m, i) => {
    const a = at(MACHINES[i], w)?.p99_us;
    const b = at(m, w)?.p99_us;
    return a && b ? `${MACHINES[i]}→${m}: ${(b / a).toFixed(2)}×` : `${MACHINES[i]}→${m}: —`;
  });
  console.log(`  ${String(w).padStart(4)} waiting   ${ratios.join('   ')}`);
}
for (const mix of MIXES) {
  const big = at(10_000, 1_000, mix);
  if (!big) continue;
  console.log(`\ntargets at 10,000 machines with 1,000 waiting (${label(mix)})`);
  console.log(
    `  p99 claim+release ${fmtUs(big.p99_us)} (target < 100 µs` +
      `${big.p99_us !== null ? `: ${(big.p99_us / 100).toFixed(2)}× of it` : ''})`,
  );
  console.log(
    `  queueing 1,000 waiters ${fmtMs(big.enqueue_ms)} (target < 1 s` +
      `${big.enqueue_ms !== null ? `: ${(big.enqueue_ms / 1000).toFixed(2)}× of it` : ''})`,
  );
}
// The next scale (issue 23 item 5): 100,000 machines with 10,000 waiting, RUNS fresh processes per workload.
const scale: Point[] = [];
if (SCALE) {
  for (const mix of MIXES) {
    const done: Point[] = [];
    for (let r = 0; r < RUNS; r++) {
      const p = runPoint(100_000, 10_000, mix);
      done.push(p);
      process.stderr.write(
        `  scale run ${r + 1} (${label(mix)}): p99 ${fmtUs(p.p99_us)}, queue ${fmtMs(p.enqueue_ms)}\n`,
      );
      if (p.timed_out) break;
    }
    scale.push(summarize(done));
  }
  console.log('\nthe next scale: 100,000 machines with 10,000 waiting, median of fresh processes');
  for (const p of scale) {
    const ok = p.p99_us !== null && p.p99_us < 100 && p.enqueue_ms !== null && p.enqueue_ms < 1000;
    console.log(
      `  ${label(p.mix).padEnd(5)}  p50 ${fmtUs(p.p50_us)} / p99 ${fmtUs(p.p99_us)} (target < 100 µs), ` +
        `queueing 10,000 ${fmtMs(p.enqueue_ms)} (target < 1 s): ${ok ? 'met' : 'NOT met'}; ` +
        `attach ${fmtUs(p.attach_us)} per machine (${fmtMs((p.attach_us * 100_000) / 1000)} for the fleet)`,
    );
  }
}
console.log(`load average ${os.loadavg()[0].toFixed(1)} at the end`);

mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const row = ({ machines, waiters, mix, ops, p50_us, p99_us, enqueue_ms, attach_us }: Point) => ({
  machines,
  waiters,
  mix,
  ops,
  p50_us,
  p99_us,
  enqueue_ms,
  attach_us,
});
writeFileSync(
  join(ROOT, 'bench/results/placement.json'),
  `${JSON.stringify(
    {
      bench: 'placement grid (issue 9, issue 23 item 5)',
      at: new Date().toISOString(),
      node: process.version,
      cores: os.availableParallelism(),
      runs: RUNS,
      loadavg: [load0, os.loadavg()[0]],
      floor_p99_us: median(floors),
      growth,
      mixed_vs_plain: vs,
      rows: rows.map(row),
      scale: scale.map(row),
    },
    null,
    2,
  )}\n`,
);
console.log('\nwrote bench/results/placement.json');
