/**
 * Benchmark (issue 13): what observing costs on the claim path. 20 000 claim → release cycles on
 * the Placer (an 8-core engine, immediate grants), side by side in one process, alternating
 * variants, median of 5 rounds each:
 *   bare     — the event bus with no subscriber
 *   logs     — + the decision log at info (JSON lines to /dev/null through the server's own logger: createLogger)
 *   metrics  — + the decision log + BerthMetrics (prom-client counters/histograms on the bus)
 * Prints µs per cycle and the ratios to bare; writes bench/results/observe.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventBus } from '../src/events.js';
import { logDecisions } from '../src/log/decisions.js';
import { createLogger } from '../src/log/logger.js';
import { BerthMetrics } from '../src/observe/metrics.js';
import { Placer } from '../src/placement/placer.js';
import type { NormalizedAsk } from '../src/placement/types.js';

const CYCLES = 20_000;
const ROUNDS = 5;
const ask: NormalizedAsk = {
  cpus: 1,
  gpus: 0,
  label: '',
  policy: 'prefer',
  node: 'bench.node',
  runId: 'bench',
  env: {},
};
type Variant = 'bare' | 'logs' | 'metrics';

async function round(variant: Variant): Promise<number> {
  const events = new EventBus();
  const placer = new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 8, gpuIds: [] }, remote: false },
    events,
  });
  const stops: (() => void)[] = [];
  if (variant !== 'bare') stops.push(logDecisions(events, createLogger('info', false, '/dev/null')));
  if (variant === 'metrics') {
    const m = new BerthMetrics(events, {
      snapshot: () => placer.snapshot(),
      callsInFlight: () => 0,
    });
    stops.push(() => m.close());
  }
  const signal = new AbortController().signal;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CYCLES; i++) {
    const g = await placer.claim(ask, { signal });
    placer.release(g.claimId);
  }
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / CYCLES;
  for (const s of stops) s();
  return us;
}

const variants: Variant[] = ['bare', 'logs', 'metrics'];
const samples: Record<Variant, number[]> = { bare: [], logs: [], metrics: [] };
for (const v of variants) await round(v); // warm-up
for (let r = 0; r < ROUNDS; r++) for (const v of variants) samples[v].push(await round(v));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const result = Object.fromEntries(
  variants.map((v) => [
    v,
    { usPerCycle: Number(median(samples[v]).toFixed(2)), samples: samples[v].map((x) => Number(x.toFixed(2))) },
  ]),
);
for (const v of variants) {
  console.log(
    `${v.padEnd(8)} ${median(samples[v]).toFixed(2)} µs per ` +
      `claim+release  (×${(median(samples[v]) / median(samples.bare)).toFixed(2)} of bare)`,
  );
}
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'observe.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ cycles: CYCLES, rounds: ROUNDS, node: process.version, result }, null, 2)}\n`);
console.log(`wrote ${out}`);
