/**
 * The chaos driver (SPEC R4, R5, P8, S1-S4): a real server process on loopback with its journal, real
 * `berth worker` agents and client processes, driven by a seeded PRNG for `durationMs` — Runs (some
 * placed by an ask, some inside a claim released while they run, some with one call id twice, some
 * past their timeout, some followed again after their stream broke), claims cancelled, half-closed or
 * held and resumed by token, Cancel of runs in flight, callers going away — while agents and client
 * processes are SIGKILLed, the server is SIGKILLed (and, in longer runs, SIGTERMed) and started again
 * on the same port and journal, and the links of workers and of a client are cut through TCP proxies
 * (test/support/link-proxy.ts). Given an etcd (`etcd`), the control plane is a cluster of 2-3 members instead
 * (SPEC S7, servers.ts) whose leader is SIGKILLed or SIGTERMed and started again as a standby, the workers given
 * every member (`--server a,b,c`) and the clients following the leader (follower.ts). The books invariant is
 * checked at every start and after every event (test/chaos/serve.ts); every command records its execution
 * (processes.ts), so that no call id may run twice; at the end the books must be full, nothing may wait or
 * run, and no command process may be left (found in /proc by the BERTH_CHAOS=<tag> in its environment).
 * Returns a report; `leaks` must be 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim } from '../support/claims.js';
import { ROOT, spawnBerth, waitForLine } from '../support/cli.js';
import { LinkProxy } from '../support/link-proxy.js';
import type { RunOutcome } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { Follower } from './follower.js';
import { executions, MARK, markEnv } from './processes.js';
import { claimThroughBreaks, runThroughBreaks } from './resumable.js';
import { ChaosServers, type ClusterFigures } from './servers.js';

/** Chaos settings. Units: ms. */
export interface ChaosOptions {
  seed: number;
  /** How long operations are started for (the end checks come after). */
  durationMs: number;
  /** Operations in flight at once (default 6). */
  concurrency?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Where the server processes' logs are kept (server-<restart>.log); default: removed with the run. */
  logDir?: string;
  /** `host:port` of an etcd: the control plane is a cluster on it, its leader killed (SPEC S7). */
  etcd?: string;
  /** Cluster members, 2 or 3 (default 3), and their leader lease in seconds (default 3). */
  members?: number;
  leaderTtlS?: number;
}

/** What a chaos run did and what it found. `leaks` is the sum of everything left over; it must be 0. */
export interface ChaosReport {
  seed: number;
  durationMs: number;
  wallMs: number;
  operations: number;
  byKind: Record<string, number>;
  kills: { workers: number; clients: number };
  /**
   * Server stops and starts again on the same journal: by SIGKILL, and by SIGTERM (which must not drain). In a
   * cluster: the leader's, each followed by a takeover and the old leader's start as a standby.
   */
  serverRestarts: number;
  serverSigkills: number;
  /** In a cluster run: the takeovers and hand-overs, and how the clients followed the leader. */
  cluster?: ClusterFigures & { follows: { hinted: number; rotated: number } };
  /** Links cut through the TCP proxies: a worker's (short or past the 2 s hold) and the cuttable client's. */
  linkCuts: { workers: number; clients: number };
  /** Runs followed again by call id after their stream broke, and how many of them ended with a result. */
  followedRuns: number;
  followedResults: number;
  /** Claims resumed by token after their stream broke; resumes that came back different (must be 0). */
  resumedClaims: number;
  resumeMismatches: string[];
  /** What a followed Run's caller saw wrong: a line twice, out of order or missing (must be empty). */
  lineProblems: string[];
  /** Command executions recorded, and call ids that ran more than once (must be empty). */
  executions: number;
  ranTwice: string[];
  releasesWithRunsInFlight: number;
  cancels: number;
  errorsByCode: Record<string, number>;
  /** The first message seen per status code other than OK (what the answers said). */
  samples: Record<string, string>;
  /** Answers no operation should ever get (INTERNAL, UNKNOWN, INVALID_ARGUMENT…), first 20. */
  unexpected: string[];
  /** Each FAILED_PRECONDITION (first 10) with when each worker last attached and detached, ms into the run. */
  failedPreconditions: string[];
  /** Runs inside a claim that ran to their end although the claim was released (SPEC R5); must be 0. */
  runsOutlivingRelease: number;
  /** Operations still unanswered at their 60 s client deadline. */
  stuck: number;
  leftover: {
    invariantErrors: string[];
    held: number;
    waiting: number;
    calls: number;
    notFull: string[];
    processes: number[];
  };
  leaks: number;
}

const WORKERS = [
  { name: 'cw1', args: ['--labels', 'gpu', '--cpus', '2', '--gpus', '0,1'] },
  { name: 'cw2', args: ['--labels', 'cpu', '--cpus', '2', '--gpus', ''] },
];
const OP_DEADLINE_MS = 60_000;
const EXPECTED = new Set([
  status.OK,
  status.CANCELLED,
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.NOT_FOUND,
  status.FAILED_PRECONDITION,
]);

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pids of live processes whose environment holds BERTH_CHAOS=<tag> (zombies do not count). */
export function taggedProcesses(tag: string): number[] {
  const needle = `BERTH_CHAOS=${tag}\0`;
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle)) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
      pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
async function until(cond: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await cond()) return true;
    } catch {
      // server restarting: try again
    }
    if (Date.now() > end) return false;
    await sleep(100);
  }
}
const codeName = (code: number) => status[code] ?? String(code);

/** The grant of `c`, or undefined when its stream ended first or after `ms` (the claim is then cancelled). */
async function grantedWithin(c: ReturnType<typeof claim>, ms: number) {
  const g = await Promise.race([c.granted.catch(() => undefined), sleep(ms).then(() => undefined)]);
  if (!g) c.call.cancel();
  return g;
}

/** Runs chaos as `o` says and returns the report (it never throws for what it finds: read `leaks`). */
export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const log = o.log ?? (() => undefined);
  const rnd = prng(o.seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const between = (lo: number, hi: number) => lo + rnd() * (hi - lo);
  const tag = `chaos-${o.seed}-${process.pid}-${Date.now()}`;
  const started = Date.now();
  let begun = started;
  const report: ChaosReport = {
    seed: o.seed,
    durationMs: o.durationMs,
    wallMs: 0,
    operations: 0,
    byKind: {},
    kills: { workers: 0, clients: 0 },
    serverRestarts: 0,
    serverSigkills: 0,
    linkCuts: { workers: 0, clients: 0 },
    followedRuns: 0,
    followedResults: 0,
    resumedClaims: 0,
    resumeMismatches: [],
    lineProblems: [],
    executions: 0,
    ranTwice: [],
    releasesWithRunsInFlight: 0,
    cancels: 0,
    errorsByCode: {},
    samples: {},
    unexpected: [],
    failedPreconditions: [],
    runsOutlivingRelease: 0,
    stuck: 0,
    leftover: { invariantErrors: [], held: 0, waiting: 0, calls: 0, notFull: [], processes: [] },
    leaks: 0,
  };
  const temp = mkdtempSync(join(tmpdir(), 'berth-chaos-'));
  const marks = join(temp, 'marks');
  mkdirSync(marks);
  // The server's logs: kept under o.logDir when given (make chaos), else in the temporary directory.
  const logs = o.logDir ?? temp;
  mkdirSync(logs, { recursive: true });
  const invariantErrors: string[] = [];
  // When each worker last attached and detached (ms since `begun`), to explain a FAILED_PRECONDITION.
  const seen = new Map<string, { attached?: number; detached?: number }>();
  const onWorker = (kind: string, machine: string) => {
    const m = seen.get(machine) ?? {};
    m[kind === 'worker_attached' ? 'attached' : 'detached'] = Date.now() - begun;
    seen.set(machine, m);
  };
  const onInvariant = (message: string) => invariantErrors.push(message);
  const servers = new ChaosServers({
    temp,
    logs,
    watch: { onInvariant, onWorker },
    log,
    between,
    etcd: o.etcd,
    members: o.members,
    ttlS: o.leaderTtlS,
  });
  await servers.start();
  const clustered = servers.clustered;
  // One client for the whole run, across restarts and takeovers: reconnects fast, follows the leader.
  const lead = new Follower(servers.addresses);

  // A client whose links are cut now and then (a TCP proxy to each server), for claims and Runs that outlive a cut.
  const clientLinks = servers.addresses.map((a) => new LinkProxy(a));
  const viaLink = new Map<string, string>();
  for (const [i, l] of clientLinks.entries()) viaLink.set(servers.addresses[i], await l.start());
  const cuttable = new Follower(
    clientLinks.map((l) => l.address),
    (a) => viaLink.get(a) ?? a,
  );
  const snap = () =>
    snapshot(lead.stub()).catch((e: ServiceError) => {
      lead.saw(e);
      throw e;
    });

  // Workers: real agents, each through its own cuttable link, SIGKILLed and started again under the same name. In
  // a cluster they are given every member (`--server a,b,c`) and follow the leader hint, which names a member's own
  // address: their links are not cut there (a proxy would be bypassed).
  const agents = new Map<string, ChildProcess>();
  const links = new Map<string, LinkProxy>();
  if (!clustered)
    for (const w of WORKERS) {
      const link = new LinkProxy(servers.addresses[0]);
      await link.start();
      links.set(w.name, link);
    }
  const startAgent = (w: (typeof WORKERS)[number]) => {
    const child = spawnBerth([
      'worker',
      '--server',
      clustered ? servers.addresses.join(',') : links.get(w.name)!.address,
      '--name',
      w.name,
      ...w.args,
      '--grace',
      '2',
      '--state-dir',
      join(temp, `agent-${w.name}`),
      '--log-level',
      'info',
    ]);
    child.stdout?.resume();
    child.stderr?.resume();
    agents.set(w.name, child);
    return child;
  };
  const attached = (names: string[]) =>
    until(async () => {
      const s = await snap();
      return names.every((n) => s.machines.some((m) => m.name === n));
    }, 30_000);
  for (const w of WORKERS) void waitForLine(startAgent(w), /attached to server/).catch(() => undefined);
  await attached(WORKERS.map((w) => w.name));
  log(`chaos seed ${o.seed}: servers on ${servers.addresses.join(', ')}, ${WORKERS.length} workers attached`);

  const count = (kind: string) => (report.byKind[kind] = (report.byKind[kind] ?? 0) + 1);
  const outcome = (kind: string, err: ServiceError | null, t0: number) => {
    lead.saw(err);
    const code = err ? err.code : status.OK;
    const name = codeName(code);
    report.errorsByCode[name] = (report.errorsByCode[name] ?? 0) + 1;
    if (err) report.samples[name] ??= `${kind}: ${err.details}`;
    if (code === status.FAILED_PRECONDITION) {
      const why =
        `+${Date.now() - begun} ms: ${kind}: ${err?.details} (workers last seen: ` +
        `${JSON.stringify(Object.fromEntries(seen))})`;
      log(`chaos: FAILED_PRECONDITION at ${why}`);
      if (report.failedPreconditions.length < 10) report.failedPreconditions.push(why);
    }
    // Every worker comes back within its reconnect grace (and the journal keeps that grace across a restart): a
    // required label is never missing for good here.
    const labelGone = code === status.FAILED_PRECONDITION && /no machine carries label/.test(err?.details ?? '');
    if (Date.now() - t0 >= OP_DEADLINE_MS - 500) report.stuck++;
    else if ((labelGone || !EXPECTED.has(code)) && report.unexpected.length < 20)
      report.unexpected.push(`${kind}: ${name} ${err?.details}`);
  };
  const deadline = () => ({ deadline: Date.now() + OP_DEADLINE_MS });
  const command = (
    sleepS: number,
    runId: string,
    node: string,
    a: { gpus?: number; label?: string; require?: boolean } = {},
    claimId?: string,
    script = `echo $CUDA_VISIBLE_DEVICES; sleep ${sleepS.toFixed(2)}`,
  ): RunRequest => ({
    placement: claimId
      ? { $case: 'claimId', value: claimId }
      : {
          $case: 'ask',
          value: {
            cpus: 1,
            gpus: a.gpus ?? 0,
            label: a.label ?? '',
            policy: a.require ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED,
            node: '',
            runId: '',
            env: {},
            holdMs: 0,
            resources: {},
          },
        },
    payload: {
      $case: 'command',
      value: {
        argv: ['sh', '-c', MARK + script],
        env: { BERTH_CHAOS: tag, ...markEnv(marks, `${runId}:chaos.${node}`) },
        cwd: '',
      },
    },
    runId,
    flow: 'chaos',
    node,
    timeoutMs: 0,
    disconnectGraceMs: 0,
    maxRetries: 0,
    retryOnFailure: false,
    follow: undefined,
  });
  const runWithDeadline = (req: RunRequest) => {
    const call = lead.stub().run(req, deadline());
    const responses: RunOutcome['responses'] = [];
    call.on('data', (r) => responses.push(r));
    const done = new Promise<RunOutcome>((resolve) => {
      call.on('error', (e: ServiceError) => resolve({ responses, error: e }));
      call.on('status', (s) => s.code === 0 && resolve({ responses, error: null }));
    });
    return { responses, done, cancel: () => call.cancel() };
  };
  let ids = 0;

  /** One random operation; resolves when every stream it opened has ended. */
  const operation = async (): Promise<void> => {
    const n = ++ids;
    const t0 = Date.now();
    const q = rnd();
    if (q < 0.1) {
      // A Run through the cuttable link that asks its call to outlive broken streams (SPEC S2, S3).
      count('run-followed');
      const lines = 4 + Math.floor(rnd() * 12);
      const script = `for i in $(seq 1 ${lines}); do echo $i; sleep 0.1; done`;
      const a = pick([{}, { label: 'cpu', require: true }, { label: 'gpu', gpus: 1, require: true }]);
      const req = { ...command(0, `f${n}`, 'n', a, undefined, script), disconnectGraceMs: 10_000 };
      const f = await runThroughBreaks(cuttable, req, lines, 40_000);
      if (f.follows > 0) report.followedRuns++;
      if (f.follows > 0 && f.responses.at(-1)?.kind?.$case === 'result') report.followedResults++;
      report.lineProblems.push(...f.problems);
      return outcome('run-followed', f.error, t0);
    }
    if (q < 0.2) {
      // A claim with a hold through the cuttable link, resumed by token when its stream breaks (SPEC S3).
      count('claim-held');
      const held = await claimThroughBreaks(cuttable, { cpus: 1, gpus: rnd() < 0.4 ? 1 : 0 }, 5000, between(500, 3000));
      report.resumedClaims += held.resumes;
      if (held.mismatch) report.resumeMismatches.push(held.mismatch);
      return outcome('claim-held', held.error, t0);
    }
    const r = (q - 0.2) / 0.8;
    if (r < 0.3) {
      count('run');
      const a = pick([
        {},
        { gpus: 1 },
        { label: 'gpu', gpus: 1, require: true },
        { label: 'cpu', require: true },
        { label: 'cpu' },
      ]);
      const o1 = await runWithDeadline(command(between(0.05, 0.6), `r${n}`, 'n', a)).done;
      outcome('run', o1.error, t0);
    } else if (r < 0.36) {
      count('run-timeout');
      const req = { ...command(2, `t${n}`, 'n'), timeoutMs: Math.round(between(100, 400)) };
      outcome('run-timeout', (await runWithDeadline(req).done).error, t0);
    } else if (r < 0.52) {
      count('claim-run-release');
      const c = claim(lead.stub(), { cpus: 1, gpus: rnd() < 0.5 ? 1 : 0 });
      const g = await grantedWithin(c, 20_000);
      if (!g) return outcome('claim-run-release', await c.ended, t0);
      const h = runWithDeadline(command(5, `cr${n}`, 'n', {}, g.claimId));
      await until(() => h.responses.some((x) => x.kind?.$case === 'event'), between(50, 1500));
      const inFlight = h.responses.length > 0;
      c.call.write({ kind: { $case: 'release', value: {} } });
      c.call.end();
      if (inFlight) report.releasesWithRunsInFlight++;
      const released = await c.ended;
      outcome('claim-run-release', released, t0);
      const ran = await h.done;
      outcome('claim-run-release', ran.error, t0);
      // SPEC R5: a 5 s run released within 1.5 s of its start must not run to its end.
      if (inFlight && !released && !ran.error) report.runsOutlivingRelease++;
    } else if (r < 0.62) {
      count('claim-cancel');
      const c = claim(lead.stub(), { cpus: 1, gpus: rnd() < 0.3 ? 1 : 0 });
      await Promise.race([c.granted.catch(() => undefined), sleep(between(0, 300))]);
      c.call.cancel();
      await c.ended;
      outcome('claim-cancel', null, t0);
    } else if (r < 0.67) {
      count('claim-half-close');
      const c = claim(lead.stub(), { cpus: 1 });
      await grantedWithin(c, 20_000);
      c.call.end();
      outcome('claim-half-close', await c.ended, t0);
    } else if (r < 0.77) {
      count('cancel-run');
      const h = runWithDeadline(command(2, `k${n}`, 'n'));
      await sleep(between(20, 600));
      report.cancels++;
      await new Promise<void>((resolve) =>
        lead.stub().cancel({ runId: `k${n}` }, new Metadata(), deadline(), (err) => {
          outcome('cancel-rpc', err, t0);
          resolve();
        }),
      );
      outcome('cancel-run', (await h.done).error, t0);
    } else if (r < 0.87) {
      count('same-call-id');
      const req = command(between(0.1, 0.5), `d${n}`, 'twice', pick([{}, { label: 'cpu', require: true }]));
      const [a, b] = await Promise.all([runWithDeadline(req).done, runWithDeadline(req).done]);
      outcome('same-call-id', a.error, t0);
      outcome('same-call-id', b.error, t0);
    } else {
      count('caller-gone');
      const h = runWithDeadline(command(2, `g${n}`, 'n', pick([{}, { label: 'cpu', require: true }])));
      await sleep(between(20, 800));
      h.cancel();
      await h.done;
      outcome('caller-gone', null, t0);
    }
  };

  // Client processes, SIGKILLed while they hold a claim with a Run inside it.
  const clientProcs = new Set<ChildProcess>();
  // A client that ends by itself first (it dialled a leader that was just going away) is started again, at most
  // three times: the kill is what this step is for.
  const clientKill = async (): Promise<void> => {
    for (let attempt = 0; attempt < 3 && Date.now() < end; attempt++) if (await clientKillOnce()) return;
  };
  /** One client process, SIGKILLed once it runs its Run (or after 1.5–4 s); false when it ended by itself first. */
  const clientKillOnce = async (): Promise<boolean> => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/chaos/client.ts', lead.current, rnd() < 0.5 ? '1' : '0', tag, marks],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    clientProcs.add(child);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const running = new Promise<void>((r) =>
      child.stdout?.on('data', (d: Buffer) => d.toString().includes('running') && r()),
    );
    await Promise.race([running, exited, sleep(between(1500, 4000))]);
    const alive = child.exitCode === null && child.signalCode === null;
    if (alive) {
      child.kill('SIGKILL');
      report.kills.clients++;
    }
    await exited;
    clientProcs.delete(child);
    return alive;
  };
  const workerKill = async (): Promise<void> => {
    const w = pick(WORKERS);
    const child = agents.get(w.name);
    if (!child || child.exitCode !== null || child.signalCode !== null || child.killed) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    report.kills.workers++;
    log(`chaos: worker ${w.name} killed at +${Date.now() - begun} ms`);
    await exited;
    await sleep(between(200, 1500));
    startAgent(w);
    log(`chaos: worker ${w.name} started again at +${Date.now() - begun} ms`);
  };
  // The server stops — SIGKILL (a crash), or SIGTERM (a routine restart: stopping is not draining) — and
  // starts again on the same port and journal; what it acknowledged must come back (SPEC S4). In a cluster the
  // leader stops so, a standby takes over from etcd, and the old leader starts again as a standby (SPEC S7).
  const restart = async (signal: NodeJS.Signals): Promise<void> => {
    log(`chaos: ${clustered ? 'leader' : 'server'} ${signal} at +${Date.now() - begun} ms`);
    if (signal === 'SIGKILL') report.serverSigkills++;
    const ms = await servers.kill(signal);
    log(`chaos: serving again at +${Date.now() - begun} ms (${ms} ms after the ${signal})`);
    report.serverRestarts++;
  };
  // A link cut: a worker's for a blip (under the 2 s --worker-hold) or past it; the cuttable client's.
  const workerCut = async (): Promise<void> => {
    if (clustered) return;
    const w = pick(WORKERS);
    const ms = rnd() < 0.5 ? between(200, 1500) : between(2500, 4000);
    log(`chaos: ${w.name}'s link cut for ${ms.toFixed(0)} ms at +${Date.now() - begun} ms`);
    links.get(w.name)!.cut();
    report.linkCuts.workers++;
    await sleep(ms);
    links.get(w.name)!.restore();
  };
  const clientCut = async (): Promise<void> => {
    const ms = between(200, 2500);
    log(`chaos: the client's link cut for ${ms.toFixed(0)} ms at +${Date.now() - begun} ms`);
    for (const l of clientLinks) l.cut();
    report.linkCuts.clients++;
    await sleep(ms);
    for (const l of clientLinks) l.restore();
  };

  // The schedule: operations keep `concurrency` in flight; kills and the restart at seeded times.
  begun = Date.now();
  const end = begun + o.durationMs;
  const chaos: Promise<void>[] = [];
  const schedule = (at: number, f: () => Promise<void>) =>
    chaos.push(sleep(Math.max(0, at - Date.now())).then(() => (Date.now() < end ? f() : undefined)));
  const restarts = clustered
    ? Math.max(2, Math.round(o.durationMs / 8000))
    : Math.max(1, Math.round(o.durationMs / 30_000));
  for (let i = 0; i < restarts; i++)
    schedule(begun + o.durationMs * ((i + between(0.4, 0.6)) / restarts), () =>
      restart(i % 2 === 0 ? 'SIGKILL' : 'SIGTERM'),
    );
  for (let i = 0; i < Math.max(2, Math.round(o.durationMs / 5000)); i++)
    schedule(begun + between(0.05, 0.9) * o.durationMs, workerCut);
  for (let i = 0; i < Math.max(2, Math.round(o.durationMs / 5000)); i++)
    schedule(begun + between(0.05, 0.9) * o.durationMs, clientCut);
  for (let i = 0; i < Math.max(2, Math.round(o.durationMs / 6000)); i++)
    schedule(begun + between(0.05, 0.95) * o.durationMs, workerKill);
  for (let i = 0; i < Math.max(2, Math.round(o.durationMs / 5000)); i++)
    schedule(begun + between(0.05, 0.9) * o.durationMs, clientKill);
  const lanes = Array.from({ length: o.concurrency ?? 6 }, async () => {
    while (Date.now() < end) {
      const t0 = Date.now();
      report.operations++;
      await operation().catch(
        (err: unknown) => report.unexpected.length < 20 && report.unexpected.push(`driver: ${String(err)}`),
      );
      if (Date.now() - t0 < 50) await sleep(100); // a server restarting answers at once: do not spin
    }
  });
  await Promise.all([...lanes, ...chaos]);
  log(`chaos: lanes done at +${Date.now() - begun} ms`);
  log(`chaos: ${report.operations} operations done; checking the books`);

  // The end: links restored, client processes gone, every worker back, then nothing may be held, wait or run.
  for (const l of [...clientLinks, ...links.values()]) l.restore();
  for (const c of clientProcs) c.kill('SIGKILL');
  for (const w of WORKERS) {
    const c = agents.get(w.name);
    if (!c || c.exitCode !== null || c.signalCode !== null) startAgent(w);
  }
  await attached(WORKERS.map((w) => w.name));
  const settled = await until(async () => {
    const s = await snap();
    return (
      s.held.length === 0 &&
      s.waiting.length === 0 &&
      s.calls.length === 0 &&
      s.machines.every((m) => m.free!.cpus === m.total!.cpus && m.free!.gpus === m.total!.gpuIds.length)
    );
  }, 20_000);
  const s = await snap();
  report.leftover.held = s.held.length;
  report.leftover.waiting = s.waiting.length;
  report.leftover.calls = s.calls.length;
  report.leftover.notFull = s.machines
    .filter((m) => m.free!.cpus !== m.total!.cpus || m.free!.gpus !== m.total!.gpuIds.length)
    .map(
      (m) => `${m.name}: ${m.free!.cpus}/${m.total!.cpus} cpus, ${m.free!.gpus}/${m.total!.gpuIds.length} gpus free`,
    );
  log(`chaos: settled=${settled} at +${Date.now() - begun} ms`);
  if (!settled) log('chaos: the books did not come back within 20 s');
  await until(() => taggedProcesses(tag).length === 0, 10_000);
  report.leftover.processes = taggedProcesses(tag);
  report.leftover.invariantErrors = invariantErrors.slice(0, 20);
  const ran = executions(marks);
  report.executions = ran.total;
  report.ranTwice = ran.twice.slice(0, 20);

  // Teardown: agents stop (SIGTERM), the client closes, the server stops.
  await Promise.all(
    [...agents.values()].map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null || c.signalCode !== null) return r();
          c.once('exit', () => r());
          c.kill('SIGTERM');
        }),
    ),
  );
  lead.close();
  cuttable.close();
  await servers.close();
  for (const l of [...clientLinks, ...links.values()]) await l.close();
  if (clustered) report.cluster = { ...servers.figures, follows: lead.moves };
  for (const pid of taggedProcesses(tag)) process.kill(pid, 'SIGKILL'); // never leave a process behind, even on failure
  rmSync(temp, { recursive: true, force: true });
  const l = report.leftover;
  report.leaks =
    report.runsOutlivingRelease +
    report.resumeMismatches.length +
    report.lineProblems.length +
    ran.twice.length +
    invariantErrors.length +
    l.held +
    l.waiting +
    l.calls +
    l.notFull.length +
    l.processes.length +
    report.stuck;
  report.wallMs = Date.now() - started;
  return report;
}

/** The report as a few lines for humans. */
export function formatReport(r: ChaosReport): string {
  const kinds = Object.entries(r.byKind)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const codes = Object.entries(r.errorsByCode)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `chaos seed ${r.seed}: ${r.operations} operations in ${(r.durationMs / 1000).toFixed(0)} s (wall ` +
      `${(r.wallMs / 1000).toFixed(1)} s): ${kinds}`,
    `  kills: ${r.kills.workers} worker(s), ${r.kills.clients} client process(es); server restarts: ` +
      `${r.serverRestarts} (${r.serverSigkills} by SIGKILL); releases with runs in flight: ` +
      `${r.releasesWithRunsInFlight}; cancels: ${r.cancels}`,
    `  link cuts: ${r.linkCuts.workers} worker, ${r.linkCuts.clients} client; runs followed again: ` +
      `${r.followedRuns} (${r.followedResults} with a result); claims resumed: ${r.resumedClaims}; ` +
      `executions: ${r.executions}`,
    ...(r.cluster ? [clusterLine(r.cluster)] : []),
    `  answers by code: ${codes}`,
    ...Object.entries(r.samples).map(([k, v]) => `    e.g. ${k}: ${v}`),
    `  unexpected: ${r.unexpected.length ? r.unexpected.join(' | ') : 'none'}; stuck: ${r.stuck}`,
    `  leaks: ${r.leaks} (runs outliving their released claim ${r.runsOutlivingRelease}, ` +
      `call ids run twice ${r.ranTwice.length}, resumes changed ${r.resumeMismatches.length}, ` +
      `lines wrong ${r.lineProblems.length}, ` +
      `invariant errors ${r.leftover.invariantErrors.length}, held ${r.leftover.held}, ` +
      `waiting ${r.leftover.waiting}, calls ${r.leftover.calls}, ` +
      `machines not full ${r.leftover.notFull.length}, processes left ${r.leftover.processes.length})`,
  ].join('\n');
}

/** The cluster part of the report: members, leader kills, takeover and hand-over times, epochs, depositions. */
function clusterLine(c: NonNullable<ChaosReport['cluster']>): string {
  const ms = (xs: number[]) => (xs.length ? `${xs.join(', ')} ms` : 'none');
  return (
    `  cluster of ${c.members} (leader TTL ${c.leaderTtlS} s): takeovers after SIGKILL ${ms(c.takeoverMs)}; ` +
    `hand-overs after SIGTERM ${ms(c.handoverMs)}; epochs ${c.epochs.join(' < ')}; clients followed a hint ` +
    `${c.follows.hinted}x, moved on a broken link ${c.follows.rotated}x; depositions: ` +
    `${c.depositions.length ? c.depositions.join(' | ') : 'none'}`
  );
}
