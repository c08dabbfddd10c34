/**
 * Warm pools (SPEC W6, issue #4 acceptance 13): 100 sequential tiny Python nodes through Run on a
 * real server and a real agent, against 100 starts of the same interpreter. Prints both and the ratio.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type RunResponse } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';
import { WorkerAgent } from '../src/agent/agent.js';
import { resolveServeOptions } from '../src/config/serve-options.js';
import { silentLogger } from '../src/log/logger.js';
import { BerthServer } from '../src/server/server.js';

const N = 100;
const stateDir = mkdtempSync(join(tmpdir(), 'berth-bench-')); // its journal, never ~/.local/state
const server = new BerthServer(resolveServeOptions({ listen: '127.0.0.1:0', grace: 1, stateDir }, {}), {
  cpus: 1,
  gpuIds: [],
});
await server.start();
const agent = new WorkerAgent(
  {
    server: server.address,
    name: 'bench',
    labels: ['bench'],
    inventory: { cpus: 4, gpuIds: [] },
    maxParallel: 0,
    graceMs: 1000,
  },
  silentLogger,
);
const attached = agent.nextAttach();
agent.start();
await attached;
const client = new PlacementServiceClient(server.address, credentials.createInsecure());

function runOnce(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.run({
      placement: {
        $case: 'ask',
        value: {
          gpus: 0,
          label: 'bench',
          policy: Policy.POLICY_REQUIRE,
          node: '',
          runId: '',
          env: {},
          holdMs: 0,
          resources: {},
        },
      },
      payload: { $case: 'source', value: { source: 'def process(i):\n    return i\n', kwargs: { i } } },
      flow: 'bench',
      node: `n${i}`,
      runId: 'bench',
      timeoutMs: 0,
      disconnectGraceMs: 0,
      maxRetries: 0,
      retryOnFailure: false,
      follow: undefined,
    });
    call.on('data', (r: RunResponse) => {
      if (r.kind?.$case === 'failure') reject(new Error(r.kind.value.message));
    });
    call.on('error', reject);
    call.on('end', () => resolve());
  });
}

await runOnce(-1); // the pool's first (and only) interpreter start
let t = performance.now();
for (let i = 0; i < N; i++) await runOnce(i);
const warm = performance.now() - t;

const python = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();
t = performance.now();
for (let i = 0; i < N; i++) spawnSync(python, ['-c', 'pass']);
const cold = performance.now() - t;

console.log(
  `${N} sequential tiny Python nodes via Run (warm pool): ${warm.toFixed(0)} ms (${(warm / N).toFixed(1)} ms/node)`,
);
console.log(`${N} starts of ${python} -c pass: ${cold.toFixed(0)} ms (${(cold / N).toFixed(1)} ms/start)`);
console.log(`ratio: warm pool is ${(cold / warm).toFixed(1)}x faster`);
client.close();
await agent.stop();
await server.stop(500);
