/**
 * Stopping is not draining (SPEC S5, issue 19 item 6), through the real `berth serve`: a plain SIGTERM stops the
 * control plane and leaves a worker's running call alone (no Drain, no Cancel frame, no wait for --grace);
 * `berth drain` drains as SPEC R3 says (Drain frame, the call gets the grace) and then the server exits.
 */
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { finished, runBerth, spawnBerth, waitForLine, type CliResult } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';
import { TestWorker } from '../support/test-worker.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

/** `berth serve --grace 30` (a drain would wait that long for the call below) with a raw worker double w1. */
async function serveWithWorker(extra: string[] = []) {
  const serve = spawnBerth([
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--cpus',
    '1',
    '--gpus',
    '',
    '--grace',
    '30',
    ...extra,
  ]);
  const served = finished(serve);
  open.push(() => {
    if (serve.exitCode === null && serve.signalCode === null) serve.kill('SIGKILL');
    return served;
  });
  const address = /(127\.0\.0\.1:\d+)/.exec(await waitForLine(serve, /berth serving/))![1];
  const worker = await TestWorker.attach(address, { name: 'w1', labels: ['w'], cpus: 2 });
  open.push(() => worker.close());
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  open.push(() => client.close());
  const call = run(client, runRequest({ label: 'w', runId: 'r1', argv: ['sleep', '60'] }));
  const { callId } = await worker.next('call');
  return { address, serve, served, worker, client, call, callId };
}

describe('stopping is not draining (SPEC S5)', () => {
  it('SIGTERM with a call running on a worker: the server exits 0 without waiting out --grace 30, and the worker ' +
    'is sent neither Drain nor Cancel — its call is left running', async () => {
    const s = await serveWithWorker();
    s.serve.kill('SIGTERM');
    const res: CliResult = await s.served; // a drain would keep it up for the 30 s grace: the test would time out
    expect(res.code).toBe(0);
    expect(res.stdout + res.stderr).toContain('berth stopping: work keeps running');
    await s.worker.waitEnded();
    expect(s.worker.frames.map((f) => f.$case)).not.toContain('drain');
    expect(s.worker.cancels).toEqual([]);
    const out = await s.call.done; // the caller hears the server went away, to follow the call again later
    expect(out.error?.code).toBe(status.UNAVAILABLE);
  }, 20_000);

  it('berth drain: the worker is sent Drain, the running call finishes within the grace, berth drain reports it ' +
    'and the server exits 0', async () => {
    const s = await serveWithWorker();
    const drained = runBerth(['drain', '--server', s.address, '--grace', '20']);
    const drain = await s.worker.next('drain');
    expect(drain.graceMs).toBe(20_000);
    s.worker.result(s.callId, 7);
    const out = await s.call.done;
    expect(out.error).toBeNull();
    const res = await drained;
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/drained: 1 call\(s\) and claim\(s\) finished within the grace, 0 cancelled/);
    expect((await s.served).code).toBe(0);
  }, 20_000);

  it('--on-stop drain keeps the old SIGTERM: the worker is sent Drain and the call keeps its grace', async () => {
    const s = await serveWithWorker(['--on-stop', 'drain']);
    s.serve.kill('SIGTERM');
    await s.worker.next('drain');
    s.worker.result(s.callId, 7);
    expect((await s.call.done).error).toBeNull();
    expect((await s.served).code).toBe(0);
  }, 20_000);

  it('a Drain asking for more than a day is INVALID_ARGUMENT naming grace_ms, and the server serves on', async () => {
    const s = await serveWithWorker();
    const err = await new Promise<ServiceError | null>((resolve) =>
      s.client.drain({ graceMs: 86_400_001 }, new Metadata(), (e) => resolve(e)),
    );
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toContain('grace_ms');
    s.worker.result(s.callId, 1);
    expect((await s.call.done).error).toBeNull();
  }, 20_000);

  it('a bad --on-stop exits 2 naming the flag and the value', async () => {
    const res = await runBerth(['serve', '--listen', '127.0.0.1:0', '--on-stop', 'later']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--on-stop');
    expect(res.stderr).toContain('later');
  });
});
