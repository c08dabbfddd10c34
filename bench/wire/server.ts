/**
 * Bench child: the bare grpc-js bidi echo that the claim cycle is measured against (berth itself runs as
 * `berth serve`): serves the Claim RPC on 127.0.0.1:0 with the same messages, answers an Ask with a fixed
 * Granted and a Release with Released, ends when the client half-closes. Talks to the orchestrator over IPC:
 * sends `{ port }` once bound; answers `'stop'` by exiting.
 */
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { PlacementServiceService } from '../../generated/ts/berth/v1/placement.js';
import type { ClaimRequest, ClaimResponse } from '../../generated/ts/berth/v1/placement.js';

const GRANTED: ClaimResponse = {
  kind: {
    $case: 'granted',
    value: {
      claimId: 'c1',
      machine: 'engine',
      remote: false,
      clamped: false,
      fellBack: false,
      asked: { cpus: 1, gpus: 0, resources: {} },
      resumeToken: '',
      resumed: false,
      allocation: {
        cpus: 1,
        gpuIds: [],
        ramMb: undefined,
        env: { OMP_NUM_THREADS: '1', CUDA_VISIBLE_DEVICES: '' },
        resources: {},
      },
    },
  },
};
const RELEASED: ClaimResponse = { kind: { $case: 'released', value: { claimId: 'c1' } } };

async function echo(): Promise<{ port: number; stop: () => void }> {
  const server = new Server();
  server.addService(PlacementServiceService, {
    claim: (call: ServerDuplexStream<ClaimRequest, ClaimResponse>) => {
      call.on('data', (m: ClaimRequest) => call.write(m.kind?.$case === 'ask' ? GRANTED : RELEASED));
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  } as never);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { port, stop: () => server.forceShutdown() };
}

const s = await echo();
process.on('message', (m) => {
  if (m === 'stop') {
    s.stop();
    process.exit(0);
  }
});
process.send!({ port: s.port });
