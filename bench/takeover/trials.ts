/**
 * Takeover trials (issue 20 targets, SPEC S7): two `berth serve --store etcd://…` members of one cluster, `workers`
 * real agents given both (`--server a,b`), `claims` claims (1 cpu + 1 GPU, hold 30 s) from `procs` client processes
 * that follow the leader (bench/survival/claimer.ts) — every GPU held by a claim or a call. Each trial starts
 * `calls` calls (1 GPU each, numbered lines), stops the leader (SIGKILL: a crash; SIGTERM: a hand-over) once they
 * all run, and counts: signal to the standby granting a new claim, to its "berth serving", to every claim resumed;
 * claims resumed with the same machine and GPU ids; calls ending with their result and every line once; executions
 * per call id; (machine, GPU id) pairs held twice (also by a newcomer granted while every GPU is held). The stopped
 * member then starts again as a standby for the next trial.
 */
import { mkdirSync } from 'node:fs';
import type { PlacementServiceClient, RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { Follower } from '../../test/chaos/follower.js';
import { executions, MARK, markEnv } from '../../test/chaos/processes.js';
import { runThroughBreaks } from '../../test/chaos/resumable.js';
import { claim } from '../../test/support/claims.js';
import { outputLines, runRequest } from '../../test/support/run-client.js';
import { until } from '../../test/support/until.js';
import { attached, client, tempDir, worker } from '../survival/harness.js';
import { type Alloc, claimer, type Line, pairs, twice } from '../survival/server-kill.js';
import { Members } from './members.js';

/** One trial's figures. Units: ms. */
export interface Trial {
  signal: 'SIGKILL' | 'SIGTERM';
  /** Signal to a new claim granted by the new leader. */
  servingClaimsMs: number;
  /** Signal to the new leader's "berth serving" log line. */
  servingMs: number;
  /** Signal to every claim resumed (or lost). */
  allResumedMs: number;
  claimsResumedSame: number;
  claimsLost: number;
  callsWithResult: number;
  callsExact: number;
  ranTwice: number;
  idsHeldTwice: number;
  extraGrantedWhileFull: number;
  /** Signal to the new leader's `cluster_elected` log line (its log's clock). */
  electedMs: number;
  /** The new leader's restore, from its `cluster_took_over` log line. */
  restoreMs: number;
  /** How the calls that did not end with a result ended (first 3). */
  callErrors: string[];
  /** Why the trial failed (no member granted a claim within 60 s); its times are then Infinity. */
  failure?: string;
}

const failed = {
  servingClaimsMs: Infinity,
  servingMs: Infinity,
  allResumedMs: Infinity,
  claimsResumedSame: 0,
  claimsLost: 0,
  callsWithResult: 0,
  callsExact: 0,
  ranTwice: 0,
  idsHeldTwice: 0,
  extraGrantedWhileFull: 0,
  restoreMs: Infinity,
  electedMs: Infinity,
  callErrors: [],
};

/** What the trials are run on. */
export interface TrialSetup {
  etcd: string;
  claims: number;
  procs: number;
  calls: number;
  workers: number;
  /** How long each call runs, s (it must outlive the takeover). */
  callS: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs the cluster and one trial per entry of `signals`; `log` gets one line per trial. */
export async function takeoverTrials(
  o: TrialSetup,
  signals: Array<'SIGKILL' | 'SIGTERM'>,
  log: (line: string) => void,
): Promise<Trial[]> {
  const members = new Members(o.etcd, `takeover-${process.pid}-${Date.now()}`);
  await members.start(2);
  const servers = members.addresses.join(',');
  const lead = new Follower(members.addresses, undefined, {
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 500,
  });
  const perWorker = Math.ceil((o.claims + o.calls) / o.workers);
  const names = Array.from({ length: o.workers }, (_, i) => `w${i + 1}`);
  for (const n of names) worker(servers, n, ['--cpus', String(perWorker + 1), '--gpus', `0-${perWorker - 1}`]);
  await attached(lead.stub(), names);
  const granted = new Map<string, Alloc>();
  let resumed = new Map<string, Alloc & { same: boolean }>();
  let lost = 0;
  const procs = Array.from({ length: o.procs }, () =>
    claimer(servers, o.claims / o.procs, (l: Line) => {
      if (l.granted) granted.set(l.granted.claimId, l.granted);
      if (l.resumed) resumed.set(l.resumed.claimId, l.resumed);
      if (l.lost) lost++;
    }),
  );
  await until(() => granted.size === o.claims, 120_000, 100);
  const trials: Trial[] = [];
  for (const [k, signal] of signals.entries()) {
    const marks = tempDir(`marks-${k}`);
    mkdirSync(marks, { recursive: true });
    const script = `echo start; for i in $(seq 1 ${o.callS * 2}); do echo $i; sleep 0.5; done`;
    const runs = Array.from({ length: o.calls }, (_, i): RunRequest => {
      // A caller that means to follow its call through a broken stream says so (SPEC S3: disconnect grace).
      const req = runRequest({ label: 'w', gpus: 1, runId: `t${k}-${i}`, argv: ['sh', '-c', MARK + script] });
      req.disconnectGraceMs = 30_000;
      const cmd = req.payload?.$case === 'command' ? req.payload.value : undefined;
      if (cmd) cmd.env = markEnv(marks, `t${k}-${i}:flow.node`);
      return req;
    });
    const followed = runs.map((r) => runThroughBreaks(lead, r, 0, 120_000));
    await until(() => executions(marks).total === o.calls, 120_000, 100);
    await sleep(1000);
    const old = members.leader();
    if (!old) throw new Error('no leader');
    const slot = members.slots.indexOf(old);
    const next = members.slots.find((m) => m !== old)!;
    resumed = new Map();
    lost = 0;
    const stubs = members.addresses.map((a) => client(a));
    const t0 = performance.now();
    const wall0 = Date.now();
    await members.stop(old, signal);
    const grantedAt = await probe(stubs).catch((err: Error) => {
      for (const m of members.slots)
        log(`${m.address} (exit ${m.child.exitCode ?? m.child.signalCode}): ${m.log().slice(-3000)}`);
      return err;
    });
    for (const s of stubs) s.close();
    if (grantedAt instanceof Error) {
      // No member served (e.g. the new leader deposed itself): recorded as failed; every member starts again.
      trials.push({ ...failed, signal, failure: grantedAt.message });
      log(`trial ${k + 1}/${signals.length}: FAILED: ${grantedAt.message}`);
      for (const [i, m] of members.slots.entries())
        if (m.child.exitCode !== null || m.child.signalCode) members.spawn(i);
      await Promise.any(members.slots.map((m) => m.serving));
      continue;
    }
    const servingClaimsMs = grantedAt - t0;
    // While every GPU is held, a newcomer must wait (until the first call ends and gives its GPU back).
    let firstEnd = Infinity;
    for (const f of followed) void f.then(() => (firstEnd = Math.min(firstEnd, performance.now())));
    let extraGrantedWhileFull = 0;
    const extras = Array.from({ length: 3 }, () => claim(lead.stub(), { cpus: 1, gpus: 1, node: 'bench.extra' }));
    for (const e of extras)
      void e.granted.then(
        () => performance.now() < firstEnd && extraGrantedWhileFull++,
        () => 0,
      );
    await until(() => resumed.size + lost >= o.claims, 120_000, 50).catch(() => undefined);
    const allResumedMs = performance.now() - t0;
    const outs = await Promise.all(followed);
    for (const e of extras) e.call.cancel();
    const callAllocs = outs.flatMap((f) => {
      const st = f.responses.find((r) => r.kind?.$case === 'started');
      return st?.kind?.$case === 'started'
        ? [{ machine: st.kind.value.machine, gpuIds: st.kind.value.allocation?.gpuIds ?? [] }]
        : [];
    });
    const ran = executions(marks);
    const t: Trial = {
      signal,
      servingClaimsMs: Math.round(servingClaimsMs),
      servingMs: Math.round((next.servingAt ?? NaN) - t0),
      allResumedMs: Math.round(allResumedMs),
      claimsResumedSame: [...resumed.values()].filter((r) => r.same && granted.get(r.claimId)).length,
      claimsLost: lost,
      callsWithResult: outs.filter((f) => f.responses.at(-1)?.kind?.$case === 'result').length,
      callsExact: outs.filter((f) => {
        const lines = outputLines(f).map((l) => l.line);
        return lines.length === o.callS * 2 + 1 && lines.slice(1).every((l, i) => l === String(i + 1));
      }).length,
      ranTwice: ran.twice.length,
      idsHeldTwice: twice([...pairs([...resumed.values()]), ...pairs(callAllocs)]) + extraGrantedWhileFull,
      extraGrantedWhileFull,
      restoreMs: next.tookOverMs ?? NaN,
      electedMs: (next.electedAt ?? NaN) - wall0,
      callErrors: outs
        .filter((f) => f.responses.at(-1)?.kind?.$case !== 'result')
        .slice(0, 3)
        .map((f) => `${f.error?.code} ${f.error?.details} (${f.follows} follows)`),
    };
    trials.push(t);
    log(`trial ${k + 1}/${signals.length}: ${JSON.stringify(t)}`);
    await members.spawn(slot).ready;
  }
  for (const p of procs) p.stdin!.write('release\n');
  await Promise.all(procs.map((p) => new Promise((r) => p.once('exit', r))));
  lead.close();
  return trials;
}

/**
 * Claims one core on each member in turn (stubs made before the signal) until one grants it, releases it;
 * resolves with when it was granted: when a server served claims again, whatever a client's way of finding it.
 */
async function probe(stubs: PlacementServiceClient[]): Promise<number> {
  const end = performance.now() + 60_000;
  for (let i = 0; performance.now() < end; i++) {
    const c = claim(stubs[i % stubs.length], { cpus: 1, node: 'bench.probe' });
    const g = await c.granted.catch(() => undefined);
    if (g) {
      const at = performance.now();
      await c.release();
      return at;
    }
    await c.ended;
    await sleep(25);
  }
  throw new Error('no member granted a claim within 60 s');
}

/** Nearest-rank percentile `p` (0-100) of `xs`. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
}
