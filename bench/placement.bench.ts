/**
 * The placement grid (issue 9 item 4; SPEC P7, P12): claim+release p50/p99 at 10, 100, 1k, 10k
 * machines × 0, 10, 100, 1,000 waiters, the time to queue the waiters, and the growth of p99 per
 * ×10 machines. Each point runs in 3 fresh processes (bench/lib/placement-point.ts), the grid
 * walked 3 times round; the table shows the median of each figure. The growth target is judged side
 * by side: each pair (M and 10 × M machines, same waiters) runs in one process that alternates blocks
 * of ops between the two (bench/lib/placement-pair.ts), median over 3 processes; fresh processes alone
 * differ by up to 2× in p50 on this shared machine, so the ratio of two table cells is printed only as a
 * reading. Writes bench/results/placement.json (one row per
 * point: machines, waiters, ops, p50_us, p99_us, enqueue_ms).
 * Run alone: `node bin/bench.js placement` or `make bench-placement`.
 * Env: BENCH_PLACEMENT_RUNS (default 3), BENCH_PLACEMENT_MACHINES / _WAITERS (comma lists) to run
 * part of the grid; BENCH_PLACEMENT_OPS and BENCH_PLACEMENT_BUDGET_MS pass to each point.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Point {
  machines: number;
  waiters: number;
  ops: number;
  p50_us: number | null;
  p99_us: number | null;
  enqueue_ms: number | null;
  queued: number;
  timed_out: boolean;
  floor_p99_us: number;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const list = (env: string | undefined, dflt: number[]) => (env ? env.split(',').map(Number) : dflt);
const MACHINES = list(process.env.BENCH_PLACEMENT_MACHINES, [10, 100, 1_000, 10_000]);
const WAITERS = list(process.env.BENCH_PLACEMENT_WAITERS, [0, 10, 100, 1_000]);
const RUNS = Number(process.env.BENCH_PLACEMENT_RUNS ?? 3);

function runPoint(machines: number, waiters: number): Point {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/lib/placement-point.ts'), String(machines), String(waiters)],
    {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Point;
}

interface Pair {
  machines: number;
  waiters: number;
  ops: number;
  p99_small_us: number | null;
  p99_big_us: number | null;
  growth: number | null;
}

function runPair(machines: number, waiters: number): Pair {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/lib/placement-pair.ts'), String(machines), String(waiters)],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Pair;
}

function median(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : null;
}

const load0 = os.loadavg()[0];
const rows: Point[] = [];
const floors: number[] = [];
// Runs go round the whole grid RUNS times (not RUNS in a row per point), so every point sees the
// same spread of machine load; a point that hit its time budget once is not run again.
const runs = new Map<string, Point[]>();
for (let r = 0; r < RUNS; r++) {
  for (const m of MACHINES) {
    for (const w of WAITERS) {
      const done = runs.get(`${m}/${w}`) ?? [];
      if (done.some((p) => p.timed_out)) continue;
      const p = runPoint(m, w);
      done.push(p);
      floors.push(p.floor_p99_us);
      runs.set(`${m}/${w}`, done);
      process.stderr.write(
        `  run ${r + 1}: ${m} machines × ${w} waiters: ` +
          `p99 ${fmtUs(p.p99_us)}${p.timed_out ? ' (time budget hit)' : ''}\n`,
      );
    }
  }
}
for (const m of MACHINES) {
  for (const w of WAITERS) {
    const done = runs.get(`${m}/${w}`)!;
    rows.push({
      machines: m,
      waiters: w,
      ops: Math.min(...done.map((p) => p.ops)),
      p50_us: median(done.map((p) => p.p50_us)),
      p99_us: median(done.map((p) => p.p99_us)),
      enqueue_ms: median(done.map((p) => p.enqueue_ms)),
      queued: Math.min(...done.map((p) => p.queued)),
      timed_out: done.some((p) => p.timed_out),
      floor_p99_us: median(done.map((p) => p.floor_p99_us))!,
    });
  }
}

function fmtUs(us: number | null): string {
  if (us === null) return '—';
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${us.toFixed(1)} µs`;
}
const fmtMs = (ms: number | null) =>
  ms === null ? '—' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
const at = (m: number, w: number) => rows.find((r) => r.machines === m && r.waiters === w);

console.log(
  `claim+release, in process (${os.availableParallelism()} cores, node ${process.version}), ` +
    `median of ${RUNS} fresh processes`,
);
console.log(
  `load average ${load0.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end; ` +
    `the timed loop around an awaited no-op` +
    ` (the machine's own jitter) has p99 ${fmtUs(median(floors))} (median over points)`,
);
console.log('p50 / p99 per claim+release; [n] = ops measured when a point hit its time budget');
console.log(['machines'.padStart(8), ...WAITERS.map((w) => `${w} waiting`.padStart(22))].join(' │ '));
for (const m of MACHINES) {
  const cells = WAITERS.map((w) => {
    const r = at(m, w)!;
    const s =
      r.enqueue_ms === null && w > 0 ? `queue > budget (${r.queued})` : `${fmtUs(r.p50_us)} / ${fmtUs(r.p99_us)}`;
    return (r.timed_out && r.enqueue_ms !== null ? `${s} [${r.ops}]` : s).padStart(22);
  });
  console.log([String(m).padStart(8), ...cells].join(' │ '));
}
console.log('\ntime to queue the waiters');
console.log(
  ['machines'.padStart(8), ...WAITERS.filter((w) => w > 0).map((w) => `${w} waiters`.padStart(14))].join(' │ '),
);
for (const m of MACHINES) {
  console.log(
    [
      String(m).padStart(8),
      ...WAITERS.filter((w) => w > 0).map((w) => {
        const r = at(m, w)!;
        return (r.enqueue_ms === null ? `> budget (${r.queued})` : fmtMs(r.enqueue_ms)).padStart(14);
      }),
    ].join(' │ '),
  );
}
// Growth side by side: pairs whose 10 × M is also on the grid, RUNS fresh processes each, round the pairs.
const pairRuns = new Map<string, Pair[]>();
for (let r = 0; r < RUNS; r++) {
  for (const m of MACHINES.filter((m) => MACHINES.includes(m * 10))) {
    for (const w of WAITERS) {
      if (at(m, w)?.timed_out || at(m * 10, w)?.timed_out) continue;
      const p = runPair(m, w);
      pairRuns.set(`${m}/${w}`, [...(pairRuns.get(`${m}/${w}`) ?? []), p]);
      process.stderr.write(
        `  pair run ${r + 1}: ${m}→${m * 10} machines × ${w} waiters: growth ${p.growth?.toFixed(2) ?? '—'}×\n`,
      );
    }
  }
}
const growth = [...pairRuns].map(([key, ps]) => {
  const [machines, waiters] = key.split('/').map(Number);
  return { machines, to: machines * 10, waiters, growth: median(ps.map((p) => p.growth)) };
});
console.log('\ngrowth of p99 per ×10 machines, side by side in one process, median of pairs (target ≤ 1.5×)');
for (const w of WAITERS) {
  const cells = growth
    .filter((g) => g.waiters === w)
    .map((g) => `${g.machines}→${g.to}: ${g.growth === null ? '—' : `${g.growth.toFixed(2)}×`}`);
  console.log(`  ${String(w).padStart(4)} waiting   ${cells.join('   ')}`);
}
const worst = Math.max(...growth.map((g) => g.growth ?? 0));
console.log(`  worst ${worst.toFixed(2)}× (target ≤ 1.5×: ${worst <= 1.5 ? 'met' : 'NOT met'})`);
console.log('\nthe same ratios read off the table above (separate processes; a reading, not the target)');
for (const w of WAITERS) {
  const ratios = MACHINES.slice(1).map((m, i) => {
    const a = at(MACHINES[i], w)?.p99_us;
    const b = at(m, w)?.p99_us;
    return a && b ? `${MACHINES[i]}→${m}: ${(b / a).toFixed(2)}×` : `${MACHINES[i]}→${m}: —`;
  });
  console.log(`  ${String(w).padStart(4)} waiting   ${ratios.join('   ')}`);
}
const big = at(10_000, 1_000);
if (big) {
  console.log('\ntargets at 10,000 machines with 1,000 waiting');
  console.log(
    `  p99 claim+release ${fmtUs(big.p99_us)} (target < 100 µs` +
      `${big.p99_us !== null ? `: ${(big.p99_us / 100).toFixed(2)}× of it` : ''})`,
  );
  console.log(
    `  queueing 1,000 waiters ${fmtMs(big.enqueue_ms)} (target < 1 s` +
      `${big.enqueue_ms !== null ? `: ${(big.enqueue_ms / 1000).toFixed(2)}× of it` : ''})`,
  );
}

mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench/results/placement.json'),
  `${JSON.stringify(
    {
      bench: 'placement grid (issue 9)',
      node: process.version,
      cores: os.availableParallelism(),
      runs: RUNS,
      loadavg: [load0, os.loadavg()[0]],
      floor_p99_us: median(floors),
      growth,
      rows: rows.map(({ machines, waiters, ops, p50_us, p99_us, enqueue_ms }) => ({
        machines,
        waiters,
        ops,
        p50_us,
        p99_us,
        enqueue_ms,
      })),
    },
    null,
    2,
  )}\n`,
);
console.log('\nwrote bench/results/placement.json');
