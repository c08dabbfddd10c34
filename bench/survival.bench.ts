/**
 * Survival targets of issue 19 (measured, not timed tests): `node bin/bench.js survival [--quick|--long]`.
 * (a) a long call with disconnect_grace_ms 5 min through worker link cuts (5 s and 30 s; 100 s more with
 *     --long, on a 300 s call of 100,000 lines), and with the defaults a 1 s cut and a cut past the 2 s hold;
 * (b) `kill -9` of `berth serve` holding 100 claims from 10 client processes and 20 running calls on 5
 *     workers, started again; and start to serving with 10,000 journaled claims;
 * (c) detection: an agent SIGKILLed (not restarted), SIGTERMed, or restarted — time to its calls failing.
 * --quick scales everything down (cuts 2 s and 5 s, 20 claims, 4 calls, one detection round).
 * Prints the rows and writes bench/results/survival.json (with the mode and each part's raw figures).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detection } from './survival/detection.js';
import { stopAll } from './survival/harness.js';
import { linkCuts } from './survival/link-cuts.js';
import { restoreTime } from './survival/restore-time.js';
import { serverKill } from './survival/server-kill.js';
import { report, ROOT, type BenchRow } from './support.js';

const quick = process.argv.includes('--quick');
const long = process.argv.includes('--long');
const mode = quick ? 'quick' : long ? 'long' : 'default';
const cuts = quick ? [2, 5] : long ? [5, 30, 100] : [5, 30];
const callS = quick ? 20 : long ? 300 : 60;
const rows: BenchRow[] = [];
const raw: Record<string, unknown> = {
  mode,
  command: `node bin/bench.js survival${quick ? ' --quick' : long ? ' --long' : ''}`,
};
try {
  const a = await linkCuts(callS, cuts);
  raw.linkCuts = a;
  const [longCall, blip, past] = a;
  rows.push({
    name: `(a) ${callS} s call, grace 5 min, cuts ${cuts.join('+')} s: lines seen once in order`,
    value: longCall.exact ? longCall.linesSeen : 0,
    unit: `/${longCall.linesExpected}`,
    target: 'exit 0, every line once in order',
    met: longCall.exact && longCall.exitCode === 0,
  });
  rows.push({
    name: '(a) defaults, 1 s cut: lines seen once in order',
    value: blip.exact ? blip.linesSeen : 0,
    unit: `/${blip.linesExpected}`,
    target: 'costs nothing',
    met: blip.exact && blip.exitCode === 0,
  });
  rows.push({
    name: '(a) defaults, cut past 2 s: cut to failure',
    value: past.failedAfterMs ?? NaN,
    unit: 'ms',
    target: '≤ 3000 ms',
    met: past.failure !== undefined && (past.failedAfterMs ?? Infinity) <= 3000,
  });

  const b = await serverKill({
    claims: quick ? 20 : 100,
    procs: quick ? 4 : 10,
    calls: quick ? 4 : 20,
    workers: 5,
    callS: 20,
  });
  raw.serverKill = b;
  rows.push({
    name: '(b) kill -9: claims resumed, same GPU ids',
    value: b.claimsResumedSame,
    unit: `/${b.claims}`,
    target: 'all',
    met: b.claimsResumedSame === b.claims,
  });
  rows.push({
    name: '(b) kill -9: calls ending with their result, every line once',
    value: b.callsExact,
    unit: `/${b.calls}`,
    target: 'all',
    met: b.callsExact === b.calls && b.callsWithResult === b.calls,
  });
  rows.push({
    name: '(b) kill -9: call ids run twice',
    value: b.ranTwice,
    unit: 'calls',
    target: '0',
    met: b.ranTwice === 0,
  });
  rows.push({
    name: '(b) kill -9: GPU ids held twice',
    value: b.gpuIdsHeldTwice,
    unit: 'ids',
    target: '0',
    met: b.gpuIdsHeldTwice === 0,
  });
  rows.push({ name: '(b) kill -9: restarted server, spawn to serving', value: b.restartToServingMs, unit: 'ms' });
  rows.push({ name: '(b) kill -9: kill to every claim resumed', value: b.killToAllResumedMs, unit: 'ms' });
  const n = quick ? 1000 : 10_000;
  const r = await restoreTime(n);
  raw.restore = { claims: n, ...r };
  rows.push({
    name: `(b) start to serving, ${n} journaled claims`,
    value: r.readyMs,
    unit: 'ms',
    target: '≤ 2000 ms',
    met: r.readyMs <= 2000,
  });
  rows.push({ name: `(b) restore of ${n} journaled claims (its log line)`, value: r.restoreMs, unit: 'ms' });
  rows.push({ name: '(b) start to serving, empty journal (just before)', value: r.emptyReadyMs, unit: 'ms' });

  const c = await detection(quick ? 1 : 3);
  raw.detection = c;
  const max = (xs: number[]) => Math.max(...xs);
  rows.push({
    name: `(c) agent SIGKILLed, not restarted: kill to failure (max of ${c.sigkillMs.join(', ')})`,
    value: max(c.sigkillMs),
    unit: 'ms',
    target: '≤ hold + 1 s = 3000 ms',
    met: max(c.sigkillMs) <= 3000,
  });
  rows.push({
    name: `(c) agent SIGTERMed: signal to failure (max of ${c.sigtermMs.join(', ')})`,
    value: max(c.sigtermMs),
    unit: 'ms',
    target: '≤ 1000 ms',
    met: max(c.sigtermMs) <= 1000,
  });
  rows.push({
    name: `(c) agent restarted: re-attach to failure (max of ${c.restartedMs.join(', ')})`,
    value: max(c.restartedMs),
    unit: 'ms',
    target: '≤ 1000 ms',
    met: max(c.restartedMs) <= 1000,
  });
  rows.push({
    name: `(c) agent restarted: its SIGKILL to failure (max of ${c.restartedFromKillMs.join(', ')})`,
    value: max(c.restartedFromKillMs),
    unit: 'ms',
  });
} finally {
  await stopAll();
}
for (const row of rows) if (row.target !== undefined) row.ratio ??= row.met ? 1 : 0;
report(
  'survival',
  `survival (issue 19 targets), mode ${mode}: real berth serve + berth worker processes on loopback`,
  rows,
);
writeFileSync(join(ROOT, 'bench', 'results', `survival-${mode}-raw.json`), `${JSON.stringify(raw, null, 2)}\n`);
console.log(`(raw figures: bench/results/survival-${mode}-raw.json)`);
