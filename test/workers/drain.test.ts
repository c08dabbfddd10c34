/**
 * Drain as SPEC R3 (issue 10 items 4 and 11), through the real `berth serve` and a real
 * `berth worker`: from SIGTERM no claim is granted (waiters and queued Runs end UNAVAILABLE
 * "server is draining"), health Check answers NOT_SERVING, and a call running on the worker gets
 * the whole --grace.
 */
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim, watch } from '../support/claims.js';
import { finished, spawnBerth, waitForLine, type CliResult } from '../support/cli.js';
import { healthClient } from '../support/grpc-std.js';
import { kinds, run, runRequest, terminal } from '../support/run-client.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** `berth serve --grace <grace>` and one `berth worker` w1 (label w, 2 cpus) attached to it. */
async function serveWithWorker(grace: number): Promise<{
  address: string;
  serve: ReturnType<typeof spawnBerth>;
  served: Promise<CliResult>;
  client: PlacementServiceClient;
}> {
  const serve = spawnBerth([
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--cpus',
    '1',
    '--gpus',
    '',
    '--grace',
    String(grace),
    '--on-stop',
    'drain',
  ]);
  const served = finished(serve);
  open.push(() => {
    if (serve.exitCode === null && serve.signalCode === null) serve.kill('SIGKILL');
    return served;
  });
  const address = /(127\.0\.0\.1:\d+)/.exec(await waitForLine(serve, /berth serving/))![1];
  const worker = spawnBerth([
    'worker',
    '--server',
    address,
    '--name',
    'w1',
    '--labels',
    'w',
    '--cpus',
    '2',
    '--gpus',
    '',
    '--log-level',
    'info',
  ]);
  const workerDone = finished(worker);
  open.push(() => {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    return workerDone;
  });
  await waitForLine(worker, /attached to server/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  open.push(() => client.close());
  return { address, serve, served, client };
}

function check(address: string): Promise<string> {
  const health = healthClient(address);
  return new Promise<string>((resolve, reject) =>
    health.check({ service: '' }, (err, res) => (err ? reject(err) : resolve(res!.status))),
  ).finally(() => health.close());
}

describe('drain (SPEC R3)', () => {
  it('SIGTERM with --grace 10 while a 6 s call runs on a worker: health Check says NOT_SERVING, ' +
    'a new claim is refused, the call completes, then the server exits 0', async () => {
    const { address, serve, served, client } = await serveWithWorker(10);
    const events = watch(client);
    open.push(() => events.cancel());
    await events.ready;
    const begun = events.next((e) => e.kind === 'call_started');
    const h = run(client, runRequest({ label: 'w', argv: ['sh', '-c', 'echo begun; sleep 6; echo finished'] }));
    await begun;
    expect(await check(address)).toBe('SERVING');
    serve.kill('SIGTERM');
    await waitForLine(serve, /berth draining/);
    expect(await check(address)).toBe('NOT_SERVING');
    const late = claim(client, { cpus: 1 });
    const lateEnd = await late.ended;
    expect(lateEnd?.code).toBe(status.UNAVAILABLE);
    expect(lateEnd?.details).toContain('server is draining');
    const o = await h.done;
    expect(o.error).toBeNull();
    expect(kinds(o)).toEqual(['started', 'event', 'event', 'result']);
    expect(terminal(o)?.value).toMatchObject({ value: { exit_code: 0 } });
    const res = await served;
    expect(res.code).toBe(0);
    expect(res.stderr).not.toMatch(/grace elapsed/);
  }, 60_000);

  it('a claim held on a worker when SIGTERM comes keeps its lease through the grace: ' +
    'its holder releases it, it is never lost', async () => {
    const { serve, served, client } = await serveWithWorker(10);
    const events = watch(client);
    open.push(() => events.cancel());
    await events.ready;
    const held = claim(client, { cpus: 1, label: 'w', policy: 2 });
    expect((await held.granted).machine).toBe('w1');
    serve.kill('SIGTERM');
    await events.next((e) => e.kind === 'server_draining');
    // An absence is observed over a bounded window: the drain checks a worker's work every 50 ms,
    // so 1 s is twenty checks in which the worker (and the lease on it) must stay.
    await new Promise((r) => setTimeout(r, 1000));
    expect(events.seen.filter((e) => e.kind === 'claim_lost' || e.kind === 'worker_detached')).toEqual([]);
    await held.release(); // throws if the stream had ended with an error (e.g. the claim lost)
    expect((await served).code).toBe(0);
  }, 60_000);

  it('a Run-with-ask queued behind a held claim when SIGTERM comes, and a new Run in that claim, ' +
    'are refused UNAVAILABLE and never started', async () => {
    const { serve, served, client } = await serveWithWorker(10);
    const events = watch(client);
    open.push(() => events.cancel());
    await events.ready;
    const held = claim(client, { cpus: 2, label: 'w', policy: 2 });
    await held.granted;
    const queued = events.next((e) => e.kind === 'node_queued' && e.runId === 'queued-run');
    const h = run(client, runRequest({ runId: 'queued-run', label: 'w', cpus: 2, argv: ['echo', 'should never run'] }));
    await queued;
    serve.kill('SIGTERM');
    const o = await h.done;
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toContain('server is draining');
    expect(kinds(o)).toEqual([]);
    const grant = await held.granted;
    const inClaim = await run(
      client,
      runRequest({ runId: 'late-run', claimId: grant.claimId, argv: ['echo', 'should never run'] }),
    ).done;
    expect(inClaim.error?.code).toBe(status.UNAVAILABLE); // a new call inside a held lease does not start either
    expect(kinds(inClaim)).toEqual([]);
    await held.release(); // the held lease was kept through the drain; giving it back ends the drain
    expect((await served).code).toBe(0);
    expect(events.seen.filter((e) => e.runId === 'queued-run').map((e) => e.kind)).toEqual([
      'node_queued',
      'node_abandoned',
    ]);
    expect(events.seen.filter((e) => e.kind === 'call_started')).toEqual([]);
  }, 60_000);
});
