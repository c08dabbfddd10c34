/**
 * A chaos client process (killed with SIGKILL by the chaos driver): claims `{cpus: 1, gpus}` on
 * argv[2], prints "granted <claim_id>", starts a Run inside the claim (a command that lives 5 s,
 * tagged with BERTH_CHAOS=<tag> so leftovers can be found in /proc) and prints "running" at its
 * first output line; then holds both streams until killed. Bounded: exits by itself after 60 s.
 */
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient, type ClaimResponse, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { ask } from '../support/claims.js';

const [address, gpus, tag] = process.argv.slice(2);
const client = new PlacementServiceClient(address, credentials.createInsecure());
const claim = client.claim();
claim.on('data', (r: ClaimResponse) => {
  if (r.kind?.$case !== 'granted') return;
  const claimId = r.kind.value.claimId;
  process.stdout.write(`granted ${claimId}\n`);
  const run = client.run({
    placement: { $case: 'claimId', value: claimId },
    payload: {
      $case: 'command',
      value: { argv: ['sh', '-c', 'echo $$; sleep 5'], env: { BERTH_CHAOS: tag }, cwd: '' },
    },
    runId: `client-${process.pid}`,
    flow: 'chaos',
    node: 'client',
    timeoutMs: 0,
    disconnectGraceMs: 0,
    maxRetries: 0,
    retryOnFailure: false,
    follow: undefined,
  });
  let said = false;
  run.on('data', (x: RunResponse) => {
    if (!said && x.kind?.$case === 'event') {
      said = true;
      process.stdout.write('running\n');
    }
  });
  run.on('error', () => process.exit(3));
});
claim.on('error', () => process.exit(3));
claim.write({ kind: { $case: 'ask', value: ask({ cpus: 1, gpus: Number(gpus), node: 'chaos.client' }) } });
setTimeout(() => process.exit(4), 60_000).unref(); // bounded: never outlives a stuck run
