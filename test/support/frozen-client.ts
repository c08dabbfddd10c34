/**
 * A separate client process for the "frozen client" scenario (SPEC R6): holds a Claim of 1 cpu
 * (run id `frozen-claim`) and a Run-with-ask of `sleep 60` on the engine (run id `frozen-run`),
 * printing "granted <claim_id>" and "started <call_id>"; then it is SIGSTOPped by the test.
 */
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type ClaimResponse, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { ask } from './claims.js';
import { runRequest } from './run-client.js';

const [address] = process.argv.slice(2);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const lease = client.claim();
lease.on('data', (r: ClaimResponse) => {
  if (r.kind?.$case === 'granted') process.stdout.write(`granted ${r.kind.value.claimId}\n`);
});
lease.on('error', () => process.exit(3));
lease.write({ kind: { $case: 'ask', value: ask({ cpus: 1, node: 'frozen.lease', runId: 'frozen-claim' }) } });
const call = client.run(runRequest({ runId: 'frozen-run', node: 'sleeper', cpus: 1, argv: ['sleep', '60'] }));
call.on('data', (r: RunResponse) => {
  if (r.kind?.$case === 'started') process.stdout.write(`started ${r.kind.value.callId}\n`);
});
call.on('error', () => process.exit(3));
setTimeout(() => process.exit(4), 90_000).unref(); // bounded: never outlives a stuck test
