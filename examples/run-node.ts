/**
 * Runs one Python node through berth and prints what the Run stream carries.
 * Usage: npx tsx examples/run-node.ts [host:port] [label]
 */
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type RunResponse } from '../generated/ts/berth/v1/placement.js';
import { Policy } from '../generated/ts/berth/v1/resources.js';

const [address = '127.0.0.1:50051', label = ''] = process.argv.slice(2);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const source = `import os
def process(x):
    print("hello from", os.uname().nodename)
    report("loss", 0.25)
    return {"out": x + 1, "threads": os.environ["OMP_NUM_THREADS"]}
`;
const call = client.run({
  placement: {
    $case: 'ask',
    value: {
      cpus: 2,
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
  payload: { $case: 'source', value: { source, kwargs: { x: 1 } } },
  flow: 'demo',
  node: 'inc',
  runId: 'r1',
  timeoutMs: 30_000,
  disconnectGraceMs: 0,
  maxRetries: 0,
  retryOnFailure: false,
  follow: undefined,
});
call.on('data', (r: RunResponse) => console.log(JSON.stringify(r.kind)));
call.on('error', (e) => {
  console.error(`error: ${e.message}`);
  process.exitCode = 1;
});
call.on('end', () => client.close());
