/**
 * Run rate (issue 11 item 1): the tiny node `def process(x): return x + 1` through Run on a real
 * `berth serve --cpus 64` and through a real `berth worker` (64 cores, label `remote`) on loopback.
 * Callers are Node clients in this process, each holding its own 1-cpu claim and running calls in
 * it one after another for a fixed time, after a warm-up of the same calls. Targets: engine 1 caller ≥ 1,000
 * calls/s; 8 and 32 callers total ≥ the 1-caller rate; remote ≥ 0.7× the engine host, per caller count, judged
 * on the median of BENCH_PAIRS rounds that measure the two back to back.
 * Beside it, the floor this machine allows (bench/run-floor/server.ts: a bare grpc-js server with the same
 * service whose Run only writes Started, asks one warm Python loop over a pipe and writes Result), measured
 * with the same client in BENCH_PAIRS rounds back to back with berth's 1-caller figure, which is their median.
 * Env: BENCH_SECONDS (measured window per figure, default 3), BENCH_WARM_SECONDS (warm-up before each engine
 * figure and the first remote one, default 10; the paired rounds warm up 2 s each), BENCH_PAIRS (default 3),
 * BENCH_CALLERS (comma list, default "1,8,32"), BENCH_ENGINE_ONLY=1 (skip the remote worker).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { PlacementServiceClient, type RunResponse } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';
import { median, report, ROOT, startBerth, type BenchRow } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
// Calls before the clock starts: on this machine the first 3,000–5,000 calls of a fresh server and client run
// at about half the later rate (berth and the floor alike), so the targets are judged on the steady state and
// the warm-up's own rate is printed beside it for the first figure.
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 10);
const SOURCE = 'def process(x):\n    return x + 1\n';
/** Rounds of remote and engine back to back per caller count (BENCH_PAIRS), each after PAIR_WARM_SECONDS. */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const PAIR_WARM_SECONDS = 2;

/** Opens a Claim for 1 cpu (label `remote` required, or none) and resolves with its id and release. */
function holdClaim(client: PlacementServiceClient, label: string): Promise<{ id: string; release: () => void }> {
  const call = client.claim();
  return new Promise((resolve, reject) => {
    call.on('data', (r) => {
      if (r.kind?.$case === 'granted') resolve({ id: r.kind.value.claimId, release: () => call.end() });
    });
    call.on('error', (e: ServiceError) => reject(e));
    call.write({
      kind: {
        $case: 'ask',
        value: {
          cpus: 1,
          gpus: 0,
          label,
          policy: label ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED,
          node: '',
          runId: '',
          env: {},
          holdMs: 0,
          resources: {},
        },
      },
    });
  });
}

function runOnce(client: PlacementServiceClient, claimId: string, runId: string, i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.run({
      placement: { $case: 'claimId', value: claimId },
      payload: { $case: 'source', value: { source: SOURCE, kwargs: { x: i } } },
      flow: 'bench',
      node: `n${i}`,
      runId,
      timeoutMs: 0,
      disconnectGraceMs: 0,
      maxRetries: 0,
      retryOnFailure: false,
      follow: undefined,
    });
    let ok = false;
    call.on('data', (r: RunResponse) => {
      if (r.kind?.$case === 'result' && r.kind.value.value === i + 1) ok = true;
      if (r.kind?.$case === 'failure') reject(new Error(`${r.kind.value.type}: ${r.kind.value.message}`));
    });
    call.on('error', reject);
    call.on('status', (s) => (s.code === 0 ? (ok ? resolve() : reject(new Error('no result'))) : undefined));
  });
}

/** Total calls/s of `callers` concurrent callers, each in its own claim, for SECONDS after `warmSeconds`. */
async function rate(
  address: string,
  label: string,
  callers: number,
  warmSeconds = WARM_SECONDS,
): Promise<{ warm: number; steady: number }> {
  const clients = Array.from(
    { length: callers },
    () => new PlacementServiceClient(address, credentials.createInsecure()),
  );
  const claims = await Promise.all(clients.map((c) => holdClaim(c, label)));
  const warmFrom = performance.now();
  const warmUntil = warmFrom + warmSeconds * 1000;
  let warmCount = 0;
  await Promise.all(
    clients.map(async (c, k) => {
      for (let i = 0; i === 0 || performance.now() < warmUntil; i++) {
        await runOnce(c, claims[k].id, `warm${k}`, i);
        warmCount++;
      }
    }),
  );
  const warm = warmCount / ((performance.now() - warmFrom) / 1000);
  let count = 0;
  const t0 = performance.now();
  const until = t0 + SECONDS * 1000;
  await Promise.all(
    clients.map(async (c, k) => {
      for (let i = 1; performance.now() < until; i++) {
        await runOnce(c, claims[k].id, `r${callers}c${k}`, i);
        count++;
      }
    }),
  );
  const perSecond = count / ((performance.now() - t0) / 1000);
  for (const cl of claims) cl.release();
  for (const c of clients) c.close();
  return { warm, steady: perSecond };
}

/** What `sideBySide` measured: medians of both figures and of the per-round ratios (a / b), and the worst ratio. */
interface Paired {
  a: number;
  b: number;
  ratio: number;
  worst: number;
}

/**
 * Figures `a` and `b` side by side (these drift by 2× within minutes here, so a figure from a minute earlier is no
 * baseline): PAIRS rounds of both back to back, alternating which goes first, each after PAIR_WARM_SECONDS.
 */
async function sideBySide(
  a: { address: string; label: string },
  b: { address: string; label: string },
  callers: number,
): Promise<Paired> {
  const as: number[] = [];
  const bs: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < PAIRS; round++) {
    const first = round % 2 === 0 ? a : b;
    const second = first === a ? b : a;
    const x = (await rate(first.address, first.label, callers, PAIR_WARM_SECONDS)).steady;
    const y = (await rate(second.address, second.label, callers, PAIR_WARM_SECONDS)).steady;
    const [ra, rb] = first === a ? [x, y] : [y, x];
    as.push(ra);
    bs.push(rb);
    ratios.push(ra / rb);
  }
  return { a: median(as), b: median(bs), ratio: median(ratios), worst: Math.min(...ratios) };
}

/** "3 rounds, worst 0.55×" (the worst only when there was more than one round). */
function rounds(p: Paired): string {
  return PAIRS > 1 ? `${PAIRS} rounds, worst ${p.worst.toFixed(2)}×` : '1 round';
}

/** Starts the floor server (bench/run-floor) and resolves with its address and the child. */
async function startFloor(): Promise<{ address: string; child: ChildProcess }> {
  // BENCH_NODE_ARGS (see startBerth) go to the floor server too, so both servers can be profiled side by side
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', join(ROOT, 'bench', 'run-floor', 'server.ts')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve((JSON.parse(out.split('\n')[0]) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`run-floor server exited ${code}`)));
  });
  return { address: `127.0.0.1:${port}`, child };
}

const floor = await startFloor();
const berth = await startBerth(64, { cpus: 64 });
try {
  const rows: BenchRow[] = [];
  const engine: Record<number, number> = {};
  const counts = (process.env.BENCH_CALLERS ?? '1,8,32').split(',').map(Number);
  let againstFloor: Paired | undefined;
  for (const n of counts) {
    const got = await rate(berth.address, '', n);
    engine[n] = got.steady;
    if (n === counts[0]) {
      rows.push({
        name: `engine host, ${n} caller(s), warm-up (first ${WARM_SECONDS} s of a fresh server)`,
        value: got.warm,
        unit: 'calls/s',
      });
    }
    if (n === 1) {
      // berth's one-caller figure is judged side by side with the floor's (after the floor's own warm-up).
      await rate(floor.address, '', 1);
      againstFloor = await sideBySide({ address: berth.address, label: '' }, { address: floor.address, label: '' }, 1);
      engine[1] = againstFloor.a;
      rows.push({
        name: 'floor: bare grpc-js Run + warm Python pipe, 1 caller',
        value: againstFloor.b,
        unit: 'calls/s',
      });
    }
    const base = n === 1 ? 1000 : engine[1];
    rows.push({
      name: `engine host, ${n} caller(s)`,
      value: engine[n],
      unit: 'calls/s',
      ratio: engine[n] / base,
      target: n === 1 ? '≥ 1,000/s' : '≥ 1-caller rate',
      met: engine[n] >= base,
    });
    if (n === 1)
      rows.push({
        name: `engine host, 1 caller, against the floor's ${againstFloor!.b.toFixed(0)}/s (${rounds(againstFloor!)})`,
        value: engine[1],
        unit: 'calls/s',
        ratio: againstFloor!.ratio,
      });
  }
  // The worker's figures, side by side with the engine host's, after one warm-up of the remote pool.
  for (const n of process.env.BENCH_ENGINE_ONLY ? [] : counts) {
    await rate(berth.address, 'remote', n);
    const r = await sideBySide({ address: berth.address, label: 'remote' }, { address: berth.address, label: '' }, n);
    rows.push({
      name: `remote worker (loopback), ${n} caller(s), against the engine's ${r.b.toFixed(0)}/s (${rounds(r)})`,
      value: r.a,
      unit: 'calls/s',
      ratio: r.ratio,
      target: '≥ 0.7× engine',
      met: r.ratio >= 0.7,
    });
  }
  report(
    'run-rate',
    `tiny node via Run in a held 1-cpu claim, ${SECONDS} s per figure after ${WARM_SECONDS} s of warm-up ` +
      `(${PAIR_WARM_SECONDS} s in paired rounds; ratios: engine 1 caller vs 1,000/s and vs the floor, others vs ` +
      `the engine's; a paired figure and its ratio are medians of ${PAIRS} rounds back to back)`,
    rows,
  );
} finally {
  await berth.stop();
  floor.child.kill('SIGTERM');
}
