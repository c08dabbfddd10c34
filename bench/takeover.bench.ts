/**
 * Takeover targets of issue 20 (measured, not timed tests; SPEC S7): `node bin/bench.js takeover [--trials N]
 * [--handovers M]`. Two `berth serve --store etcd://…` members (default 5 s leader lease) on an etcd member of its
 * own, 5 real workers, 100 held claims from 10 client processes (hold 30 s) and 20 running calls: the leader
 * SIGKILLed N times (default 20) — a standby granting claims within 10 s (p99), 100/100 claims resumed with the same
 * GPU ids, 20/20 calls ending with their results, 0 ids held twice — then SIGTERMed M times (default 5): hand-over
 * (the standby's "berth serving") within 2 s. A new claim right after a takeover may wait for a worker the new
 * leader holds as disconnected until it is back: "granting a claim" includes that wait. Calls ask a disconnect
 * grace of 30 s (their caller follows them again, SPEC S3). Prints the rows and writes bench/results/takeover.json
 * and bench/results/takeover-raw.json (every trial, the load average before and after).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { etcdMissing, startEtcd } from '../test/support/etcd.js';
import { stopAll } from './survival/harness.js';
import { report, ROOT, type BenchRow } from './support.js';
import { percentile, takeoverTrials, type Trial } from './takeover/trials.js';

const flag = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v < 1) throw new Error(`takeover: ${name} must be a whole number ≥ 1`);
  return v;
};
const kills = flag('--trials', 20);
const handovers = flag('--handovers', 5);
const missing = etcdMissing();
if (missing) throw new Error(`takeover bench: ${missing}`);
const setup = { claims: 100, procs: 10, calls: 20, workers: 5, callS: 12 };
const loadBefore = os.loadavg();
const etcd = await startEtcd();
let trials: Trial[] = [];
try {
  const signals = [...Array(kills).fill('SIGKILL'), ...Array(handovers).fill('SIGTERM')];
  trials = await takeoverTrials({ etcd: etcd.endpoint, ...setup }, signals, (l) => console.log(l));
} finally {
  await stopAll();
  await etcd.stop();
}
const loadAfter = os.loadavg();
const of = (s: string) => trials.filter((t) => t.signal === s);
const k = of('SIGKILL');
const h = of('SIGTERM');
const p = (xs: Trial[], f: (t: Trial) => number, q: number) => percentile(xs.map(f), q);
const min = (xs: Trial[], f: (t: Trial) => number) => Math.min(...xs.map(f));
const sum = (f: (t: Trial) => number) => trials.reduce((a, t) => a + f(t), 0);
const rows: BenchRow[] = [
  {
    name: `SIGKILL: signal to the standby granting a claim, p99 of ${k.length}`,
    value: p(k, (t) => t.servingClaimsMs, 99),
    unit: 'ms',
    target: '≤ 10000 ms',
    met: p(k, (t) => t.servingClaimsMs, 99) <= 10_000,
  },
  {
    name: 'SIGKILL: signal to the standby granting a claim, p50',
    value: p(k, (t) => t.servingClaimsMs, 50),
    unit: 'ms',
  },
  { name: 'SIGKILL: signal to "berth serving", p99', value: p(k, (t) => t.servingMs, 99), unit: 'ms' },
  { name: 'SIGKILL: signal to every claim resumed, p99', value: p(k, (t) => t.allResumedMs, 99), unit: 'ms' },
  {
    name: 'claims resumed with the same GPU ids (fewest in a trial)',
    value: min(trials, (t) => t.claimsResumedSame),
    unit: `/${setup.claims}`,
    target: 'all',
    met: min(trials, (t) => t.claimsResumedSame) === setup.claims,
  },
  {
    name: 'calls ending with their result, every line once (fewest)',
    value: min(trials, (t) => Math.min(t.callsExact, t.callsWithResult)),
    unit: `/${setup.calls}`,
    target: 'all',
    met: min(trials, (t) => Math.min(t.callsExact, t.callsWithResult)) === setup.calls,
  },
  {
    name: 'call ids run twice (all trials)',
    value: sum((t) => t.ranTwice),
    unit: 'calls',
    target: '0',
    met: sum((t) => t.ranTwice) === 0,
  },
  {
    name: 'GPU ids held twice (all trials)',
    value: sum((t) => t.idsHeldTwice),
    unit: 'ids',
    target: '0',
    met: sum((t) => t.idsHeldTwice) === 0,
  },
  {
    name: `SIGTERM: signal to the standby's "berth serving" (hand-over), p99 of ${h.length}`,
    value: p(h, (t) => t.servingMs, 99),
    unit: 'ms',
    target: '≤ 2000 ms',
    met: p(h, (t) => t.servingMs, 99) <= 2000,
  },
  {
    name: 'SIGTERM: signal to the standby elected (its log line), p99',
    value: p(h, (t) => t.electedMs, 99),
    unit: 'ms',
  },
  {
    name: 'SIGTERM: signal to the standby granting a claim, p99',
    value: p(h, (t) => t.servingClaimsMs, 99),
    unit: 'ms',
  },
  {
    name: 'SIGKILL: signal to the standby elected (its log line), p99',
    value: p(k, (t) => t.electedMs, 99),
    unit: 'ms',
  },
  { name: 'takeover restore (cluster_took_over ms), p99 of all', value: p(trials, (t) => t.restoreMs, 99), unit: 'ms' },
];
for (const row of rows) if (row.target !== undefined) row.ratio ??= row.met ? 1 : 0;
const command = `node bin/bench.js takeover --trials ${kills} --handovers ${handovers}`;
report(
  'takeover',
  `takeover (issue 20 targets): ${command}; load ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`,
  rows,
);
const raw = { command, setup, leaderTtlS: 5, loadBefore, loadAfter, trials };
writeFileSync(join(ROOT, 'bench', 'results', 'takeover-raw.json'), `${JSON.stringify(raw, null, 2)}\n`);
console.log(
  `(every trial: bench/results/takeover-raw.json; load after ${loadAfter.map((x) => x.toFixed(2)).join(' ')})`,
);
