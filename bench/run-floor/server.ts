/**
 * Bench child: the floor under berth's Run (issue 11). A bare grpc-js server with the same service and
 * messages whose Run does only what any Run must: write Started, send the call to one warm Python
 * process over a pipe (loop.py), wait for its answer line, write Result and end. No placement, no
 * claim lookup (its Claim grants at once and holds until half-close), no call ids, no events, no
 * validation. Prints `{"port":N}` on stdout once bound; SIGTERM ends it.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, type ServerDuplexStream, type ServerWritableStream } from '@grpc/grpc-js';
import { PlacementServiceService } from '../../generated/ts/berth/v1/placement.js';
import type { ClaimRequest, ClaimResponse, RunRequest, RunResponse } from '../../generated/ts/berth/v1/placement.js';

const python = spawn('python3', ['-u', join(dirname(fileURLToPath(import.meta.url)), 'loop.py')], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const waiting: ((value: unknown) => void)[] = [];
createInterface({ input: python.stdout! }).on('line', (line) =>
  waiting.shift()?.((JSON.parse(line) as { value: unknown }).value),
);

function call(source: string, kwargs: unknown): Promise<unknown> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    python.stdin!.write(`${JSON.stringify({ source, kwargs })}\n`);
  });
}

const server = new Server();
server.addService(PlacementServiceService, {
  // The caller's held claim: granted at once, held until the caller half-closes (not measured).
  claim: (call: ServerDuplexStream<ClaimRequest, ClaimResponse>) => {
    call.once('data', () =>
      call.write({
        kind: {
          $case: 'granted',
          value: { claimId: 'floor', machine: 'engine', remote: false, clamped: false, fellBack: false },
        },
      } as ClaimResponse),
    );
    call.on('end', () => call.end());
    call.on('error', () => {});
  },
  run: async (stream: ServerWritableStream<RunRequest, RunResponse>) => {
    const req = stream.request;
    const callId = `${req.runId}:${req.flow}.${req.node}`;
    stream.write({
      kind: {
        $case: 'started',
        value: {
          callId,
          machine: 'engine',
          allocation: { cpus: 1, gpuIds: [], ramMb: undefined, env: { OMP_NUM_THREADS: '1' }, resources: {} },
          clamped: false,
          asked: { cpus: 1, gpus: 0, resources: {} },
          fellBack: false,
        },
      },
    } as RunResponse);
    const source = req.payload?.$case === 'source' ? req.payload.value : { source: '', kwargs: {} };
    const value = await call(source.source, source.kwargs);
    stream.write({ kind: { $case: 'result', value: { callId, value } } } as RunResponse);
    stream.end();
  },
} as never);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);
process.on('SIGTERM', () => {
  server.forceShutdown();
  python.kill();
  process.exit(0);
});
console.log(JSON.stringify({ port }));
