/**
 * Holds one claim from TypeScript with the raw generated stubs: asks for 1 cpu, prints the grant, releases it.
 * Usage: npx tsx examples/claim.ts [host:port]   (the typed client `berth/client` wraps all of this)
 */
import { credentials } from '@grpc/grpc-js';
import { ClaimRequest, PlacementServiceClient, type ClaimResponse } from '../generated/ts/berth/v1/placement.js';

const [address = '127.0.0.1:50051'] = process.argv.slice(2);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const claim = client.claim();
claim.on('data', (r: ClaimResponse) => {
  if (r.kind?.$case === 'queued') console.log(`waiting: ${r.kind.value.detail}`);
  if (r.kind?.$case === 'granted') {
    const { machine, allocation } = r.kind.value;
    console.log(`granted on ${machine}: ${JSON.stringify(allocation)}`);
    claim.write(ClaimRequest.fromPartial({ kind: { $case: 'release', value: {} } }));
  }
  if (r.kind?.$case === 'released') claim.end();
});
claim.on('error', (e) => {
  console.error(`error: ${e.message}`);
  process.exitCode = 1;
});
claim.on('end', () => client.close());
claim.write(ClaimRequest.fromPartial({ kind: { $case: 'ask', value: { cpus: 1, node: 'demo.fit' } } }));
