/**
 * The one-caller engine Run rate of this checkout against another build, side by side (issue 19 item 5: within
 * 10 % of before). Usage: `npx tsx bench/paired-engine-rate.ts <other bin/berth.js> [rounds]`. Both servers run at
 * once (`--cpus 64`), one caller each in its own claim; after 2 s of warm-up each, every round gives each server
 * BENCH_SECONDS (default 3) in slices of 250 ms, alternating (the load on a shared machine drifts alike for both).
 * Payloads: the run-rate bench's tiny Python node (the target) and the command `true` (what now runs in the engine
 * keeper); BENCH_PAYLOADS=python measures the first only. Prints each round's figures and the median of the
 * per-round ratios (this / other).
 */
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { PlacementServiceClient, type RunRequest } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';
import { median, startBerth } from './support.js';

const other = process.argv[2];
if (!other) throw new Error('usage: npx tsx bench/paired-engine-rate.ts <other bin/berth.js> [rounds]');
const ROUNDS = Number(process.argv[3] ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

type Payload = RunRequest['payload'];
const PAYLOADS: Record<string, (i: number) => Payload> = {
  'python x+1': (i) => ({
    $case: 'source',
    value: { source: 'def process(x):\n    return x + 1\n', kwargs: { x: i } },
  }),
  'command true': () => ({ $case: 'command', value: { argv: ['true'], env: {}, cwd: '' } }),
};

/** A held 1-cpu claim on the engine. */
function claim(c: PlacementServiceClient): Promise<{ id: string; release: () => void }> {
  const call = c.claim();
  return new Promise((resolve, reject) => {
    call.on('data', (r) => {
      if (r.kind?.$case === 'granted') resolve({ id: r.kind.value.claimId, release: () => call.end() });
    });
    call.on('error', (e: ServiceError) => reject(e));
    const ask = { cpus: 1, gpus: 0, label: '', policy: Policy.POLICY_UNSPECIFIED, node: '', runId: '', env: {} };
    call.write({ kind: { $case: 'ask', value: { ...ask, holdMs: 0, resources: {} } } });
  });
}

function runOnce(c: PlacementServiceClient, claimId: string, payload: Payload, i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = c.run({
      placement: { $case: 'claimId', value: claimId },
      payload,
      flow: 'bench',
      node: `n${i}`,
      runId: `p${process.pid}`,
      timeoutMs: 0,
      disconnectGraceMs: 0,
      follow: undefined,
      maxRetries: 0,
      retryOnFailure: false,
    });
    let ok = false;
    call.on('data', (r) => {
      if (r.kind?.$case === 'result') ok = true;
      if (r.kind?.$case === 'failure') reject(new Error(`${r.kind.value.type}: ${r.kind.value.message}`));
    });
    call.on('error', reject);
    call.on('status', (s) => (s.code === 0 ? (ok ? resolve() : reject(new Error('no result'))) : undefined));
  });
}

let n = 0;
/** A caller in its own claim on `address`: `calls(ms)` runs calls one after another for `ms` and counts them. */
async function caller(address: string, payload: (i: number) => Payload) {
  const c = new PlacementServiceClient(address, credentials.createInsecure());
  const cl = await claim(c);
  return {
    async calls(ms: number): Promise<number> {
      let count = 0;
      for (const until = performance.now() + ms; performance.now() < until; count++)
        await runOnce(c, cl.id, payload(n), n++);
      return count;
    },
    close() {
      cl.release();
      c.close();
    },
  };
}

/** Slices of SLICE_MS, alternating between the two servers, so that the machine's load drifts alike for both. */
const SLICE_MS = 250;
const mine = await startBerth(64);
const base = await startBerth(64, undefined, other);
try {
  const only = process.env.BENCH_PAYLOADS; // e.g. "python": only the payloads whose name contains it
  for (const [name, payload] of Object.entries(PAYLOADS).filter(([k]) => !only || k.includes(only))) {
    const [a, b] = [await caller(mine.address, payload), await caller(base.address, payload)];
    await a.calls(2000); // warm-up of both
    await b.calls(2000);
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let [x, y] = [0, 0];
      for (let k = 0; k < (SECONDS * 1000) / SLICE_MS; k++) {
        if ((k + round) % 2 === 0) x += await a.calls(SLICE_MS);
        else y += await b.calls(SLICE_MS);
        if ((k + round) % 2 === 0) y += await b.calls(SLICE_MS);
        else x += await a.calls(SLICE_MS);
      }
      ratios.push(x / y);
      const per = (v: number) => (v / SECONDS).toFixed(0);
      console.log(`${name} round ${round + 1}: this ${per(x)}/s, other ${per(y)}/s, ${(x / y).toFixed(3)}×`);
    }
    console.log(`${name}: median ratio this/other ${median(ratios).toFixed(3)}× over ${ROUNDS} rounds`);
    a.close();
    b.close();
  }
} finally {
  await Promise.all([mine.stop(), base.stop()]);
}
