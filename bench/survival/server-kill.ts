/**
 * Survival target (b), issue 19: `kill -9` of `berth serve` while it holds `claims` claims (1 cpu + 1 GPU each,
 * with a hold) from `procs` client processes (bench/survival/claimer.ts) and `calls` running calls (1 GPU each,
 * printing numbered lines) on `workers` workers, then started again on the same journal. Counted: claims
 * resumed with the same machine and GPU ids, calls ending with their result and every line once (followed
 * again by call id), executions per call id (a marker file each), (machine, GPU id) pairs held twice — over
 * the claims' and calls' allocations before and after, and by any extra claim granted while all GPUs are held.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import type { PlacementServiceClient, RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { executions, MARK, markEnv } from '../../test/chaos/processes.js';
import { fixed } from '../../test/chaos/follower.js';
import { runThroughBreaks } from '../../test/chaos/resumable.js';
import { claim } from '../../test/support/claims.js';
import { ROOT } from '../../test/support/cli.js';
import { outputLines, runRequest } from '../../test/support/run-client.js';
import { until } from '../../test/support/until.js';
import { attached, client, freeAddress, kill, serve, tempDir, worker } from './harness.js';

/** What the kill cost. */
export interface ServerKill {
  claims: number;
  claimsResumedSame: number;
  claimsLost: number;
  calls: number;
  callsWithResult: number;
  callsExact: number;
  executions: number;
  ranTwice: number;
  gpuIdsHeldTwice: number;
  extraGrantedWhileFull: number;
  restartToServingMs: number;
  killToAllResumedMs: number;
}

/** A claimer's report line. */
export type Line = { granted?: Alloc; resumed?: Alloc & { same: boolean }; lost?: unknown; released?: number };
export type Alloc = { claimId: string; machine: string; gpuIds: number[] };

/** A claimer process (claimer.ts) holding `n` claims on `address` (one or several, comma-separated). */
export function claimer(address: string, n: number, onLine: (l: Line) => void): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/survival/claimer.ts', address, String(n)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (buf + d.toString()).split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) if (l.trim()) onLine(JSON.parse(l) as Line);
  });
  return child;
}

/** (machine, GPU id) pairs of allocations, and how many of them occur more than once. */
export const pairs = (xs: { machine: string; gpuIds: number[] }[]) =>
  xs.flatMap((x) => x.gpuIds.map((g) => `${x.machine}/${g}`));
export const twice = (ps: string[]) => ps.length - new Set(ps).size;

/** Runs the kill as described; `callS` is how long each call runs. */
export async function serverKill(o: { claims: number; procs: number; calls: number; workers: number; callS: number }) {
  const address = await freeAddress();
  const state = tempDir('state');
  const marks = tempDir('marks');
  mkdirSync(marks, { recursive: true });
  let s = await serve(address, state);
  const c: PlacementServiceClient = client(address);
  const perWorker = Math.ceil((o.claims + o.calls) / o.workers);
  const names = Array.from({ length: o.workers }, (_, i) => `w${i + 1}`);
  for (const n of names) worker(address, n, ['--cpus', String(perWorker + 1), '--gpus', `0-${perWorker - 1}`]);
  await attached(c, names);
  const granted = new Map<string, Alloc>();
  const resumed = new Map<string, Alloc & { same: boolean }>();
  let lost = 0;
  const procs = Array.from({ length: o.procs }, () =>
    claimer(address, o.claims / o.procs, (l) => {
      if (l.granted) granted.set(l.granted.claimId, l.granted);
      if (l.resumed) resumed.set(l.resumed.claimId, l.resumed);
      if (l.lost) lost++;
    }),
  );
  await until(() => granted.size === o.claims, 120_000, 100);
  const script = `echo start; for i in $(seq 1 ${o.callS * 2}); do echo $i; sleep 0.5; done`;
  const runs = Array.from({ length: o.calls }, (_, i): RunRequest => {
    const req = runRequest({ label: 'w', gpus: 1, runId: `k${i}`, argv: ['sh', '-c', MARK + script] });
    const cmd = req.payload?.$case === 'command' ? req.payload.value : undefined;
    if (cmd) cmd.env = markEnv(marks, `k${i}:flow.node`);
    return req;
  });
  const followed = runs.map((r) => runThroughBreaks(fixed(c), r, 0, 120_000));
  // All calls running (a marker each), then the crash.
  await until(() => executions(marks).total === o.calls, 120_000, 100);
  await new Promise((r) => setTimeout(r, 1500));
  const t0 = performance.now();
  await kill(s.child);
  s = await serve(address, state);
  const restartToServingMs = s.ms;
  // While every GPU is held, a newcomer must wait: a grant now would hold some GPU id twice.
  // (until the first call ends and gives its GPU back).
  let firstEnd = Infinity;
  for (const f of followed) void f.then(() => (firstEnd = Math.min(firstEnd, performance.now())));
  let extraGrantedWhileFull = 0;
  const extras = Array.from({ length: 5 }, () => claim(c, { cpus: 1, gpus: 1, node: 'bench.extra' }));
  for (const e of extras)
    void e.granted.then(
      () => performance.now() < firstEnd && extraGrantedWhileFull++,
      () => 0,
    );
  await until(() => resumed.size + lost >= o.claims, 120_000, 50).catch(() => undefined);
  const killToAllResumedMs = performance.now() - t0;
  const outs = await Promise.all(followed);
  for (const e of extras) e.call.cancel();
  const callAllocs = outs.flatMap((f) => {
    const st = f.responses.find((r) => r.kind?.$case === 'started');
    return st?.kind?.$case === 'started'
      ? [{ machine: st.kind.value.machine, gpuIds: st.kind.value.allocation?.gpuIds ?? [] }]
      : [];
  });
  const held = [...pairs([...granted.values()]), ...pairs(callAllocs)];
  const after = [...pairs([...resumed.values()]), ...pairs(callAllocs)];
  const ran = executions(marks);
  for (const p of procs) p.stdin!.write('release\n');
  await Promise.all(procs.map((p) => new Promise((r) => p.once('exit', r))));
  c.close();
  const result: ServerKill = {
    claims: granted.size,
    claimsResumedSame: [...resumed.values()].filter((r) => r.same && granted.get(r.claimId)).length,
    claimsLost: lost,
    calls: o.calls,
    callsWithResult: outs.filter((f) => f.responses.at(-1)?.kind?.$case === 'result').length,
    callsExact: outs.filter((f) => {
      const lines = outputLines(f).map((l) => l.line);
      return lines.length === o.callS * 2 + 1 && lines.slice(1).every((l, i) => l === String(i + 1));
    }).length,
    executions: ran.total,
    ranTwice: ran.twice.length,
    gpuIdsHeldTwice: twice(held) + twice(after) + extraGrantedWhileFull,
    extraGrantedWhileFull,
    restartToServingMs: Math.round(restartToServingMs),
    killToAllResumedMs: Math.round(killToAllResumedMs),
  };
  return result;
}
