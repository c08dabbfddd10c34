/**
 * A separate client process for the "client process killed while granted" scenario: claims
 * `{cpus, gpus}` on argv[2], prints "granted <claim_id>" and then holds the lease until killed.
 */
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { ask } from './claims.js';

const [address, cpus, gpus] = process.argv.slice(2);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const call = client.claim();
call.on('data', (r: { kind?: { $case: string; value: { claimId?: string } } }) => {
  if (r.kind?.$case === 'granted') process.stdout.write(`granted ${r.kind.value.claimId}\n`);
});
call.on('error', () => process.exit(3));
call.write({ kind: { $case: 'ask', value: ask({ cpus: Number(cpus), gpus: Number(gpus), node: 'killed.client' }) } });
setTimeout(() => process.exit(4), 60_000).unref(); // bounded: never outlives a stuck test
