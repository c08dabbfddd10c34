/**
 * Bench child: drives claim cycles against argv[2] (host:port) with argv[3] concurrent streams.
 * A cycle is the Claim stream shape: open, send Ask, read one answer, send Release, read one
 * answer, half-close, read the OK status. Warms up for argv[4] ms, tells the orchestrator
 * `'start'`, counts cycles for argv[5] ms, then sends `{ cycles, ms, grantP50, grantP99 }` and exits: the grant
 * latencies (ms) are from writing the Ask to reading its answer, over the counted cycles.
 */
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { PlacementServiceClient, type ClaimRequest } from '../../generated/ts/berth/v1/placement.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';

const [address, streamsArg, warmArg, runArg] = process.argv.slice(2);
const streams = Number(streamsArg);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const ASK: ClaimRequest = {
  kind: {
    $case: 'ask',
    value: {
      cpus: 1,
      gpus: 0,
      label: '',
      policy: Policy.POLICY_UNSPECIFIED,
      node: 'bench.node',
      runId: 'bench',
      env: {},
      holdMs: 0,
      resources: {},
    },
  },
};
const RELEASE: ClaimRequest = { kind: { $case: 'release', value: {} } };

/** Grant latencies of the counted cycles, ms. */
const grants: number[] = [];

function cycle(): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.claim();
    let answers = 0;
    const asked = performance.now();
    call.on('data', () => {
      answers++;
      if (answers === 1 && counting) grants.push(performance.now() - asked);
      if (answers === 1) call.write(RELEASE);
      else if (answers === 2) call.end();
    });
    call.on('error', (e: ServiceError) => reject(e));
    call.on('status', (s) => {
      if (s.code === 0 && answers === 2) resolve();
      else reject(new Error(`status ${s.code} ${s.details} after ${answers} answers`));
    });
    call.write(ASK);
  });
}

let counting = false;
let cycles = 0;
let stop = false;
async function loop(): Promise<void> {
  while (!stop) {
    await cycle();
    if (counting) cycles++;
  }
}

const loops = Array.from({ length: streams }, () => loop());
await new Promise((r) => setTimeout(r, Number(warmArg)));
process.send!('start');
counting = true;
const t0 = performance.now();
await new Promise((r) => setTimeout(r, Number(runArg)));
counting = false;
const ms = performance.now() - t0;
stop = true;
await Promise.all(loops);
grants.sort((x, y) => x - y);
const at = (q: number) => grants[Math.min(grants.length - 1, Math.floor(q * grants.length))] ?? 0;
process.send!({ cycles, ms, grantP50: at(0.5), grantP99: at(0.99) });
client.close();
process.exit(0);
