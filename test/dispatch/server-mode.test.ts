/**
 * `dispatch --server` (SPEC D2, D8; issue #5 review): the batch is checked against berth's machines
 * before anything starts, a short grant is never run, the token and the address are checked up
 * front with the real cause, and jobs berth refuses are `error`s, one result per job in file order.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { runBatch } from '../../src/dispatch/batch-run.js';
import { parseBatch } from '../../src/dispatch/batch.js';
import { describeCallError } from '../../src/dispatch/remote-outcome.js';
import { RemoteRunner } from '../../src/dispatch/remote-runner.js';
import { ConsoleReporter } from '../../src/dispatch/reporter.js';
import { watch } from '../support/claims.js';
import { finished, runBerth, spawnBerth, waitForLine } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { closedPort } from '../support/ports.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';
import { dispatch, recordingJob, scratch, started, statuses, withLogDir, type Scratch } from './support.js';

let s: Scratch | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  s?.cleanup();
  await t?.close();
  s = undefined;
  t = undefined;
});

describe('dispatch --server checks before it starts anything', () => {
  it('a job needing 5 devices against machines with none: refused, naming the job, 5 and 0; exit 2', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [] });
    const file = s.batch({ jobs: [recordingJob(s.dir, 'small', 0, 0), recordingJob(s.dir, 'big', 5, 0)] });
    const r = await dispatch(file, '--server', t.address);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /1 job needs more devices than there are: the largest machine of berth at \S+ has no devices\n {2}jobs\[1\] \("big"\) needs 5 devices\n/,
    );
    expect(r.stderr).toMatch(/nothing was started/);
    expect(started(s.dir, 'small')).toBe(false);
    expect(started(s.dir, 'big')).toBe(false);
  });

  it('a missing token is caught up front: exit 2 naming --token/BERTH_TOKEN, nothing started', async () => {
    s = scratch();
    t = await startServer({ flags: { token: 's3cret' } });
    const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
    const r = await dispatch(file, '--server', t.address);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/--token\/BERTH_TOKEN: berth at \S+ refused the token \(UNAUTHENTICATED/);
    expect(started(s.dir, 'a')).toBe(false);
    const ok = await runBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address])], {
      BERTH_TOKEN: 's3cret',
    });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
  });

  it('a dead address: says it is connecting at once, then the real cause (ECONNREFUSED), exit 1', async () => {
    s = scratch();
    const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
    const address = `127.0.0.1:${await closedPort()}`;
    const r = await dispatch(file, '--server', address);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`connecting to ${address}`);
    expect(r.stderr).toMatch(new RegExp(`cannot reach berth at ${address}: .*ECONNREFUSED`));
    // It used to wait out a 10 s deadline and say only that: the cause, not a deadline, is the answer.
    expect(r.stderr).not.toMatch(/deadline/i);
    expect(started(s.dir, 'a')).toBe(false);
  });

  it('an unresolvable name: the DNS failure is named, exit 1', async () => {
    s = scratch();
    const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
    const r = await dispatch(file, '--server', 'no-such-host.invalid:50051');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach berth at no-such-host\.invalid:50051: .*(resolution|ENOTFOUND|EAI_AGAIN)/i);
  });
});

describe('dispatch --server results', () => {
  it('a grant with fewer devices than the job needs (berth clamped it) is an error, never a short run', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [] }); // berth clamps a 5-GPU ask to the engine's 0 (SPEC P5)
    const jobs = parseBatch([
      { name: 'big', devices: 5, shell: 'sleep 5' },
      { name: 'cpu', devices: 0, argv: ['true'] },
    ]);
    const runner = new RemoteRunner(t.address, 'CUDA_VISIBLE_DEVICES');
    const out = new PassThrough();
    out.resume();
    const results = await runBatch(
      jobs,
      runner,
      { pool: null, maxInFlight: 2, backfill: 0, failFast: false, graceMs: 1000, logDir: s.dir },
      new ConsoleReporter(out, false, 2),
    );
    runner.close();
    expect(results.map((r) => [r.name, r.status])).toEqual([
      ['big', 'error'],
      ['cpu', 'passed'],
    ]);
    expect(results[0].error).toMatch(/berth granted 0 of the 5 devices it needs .*not run/);
    await expect.poll(async () => (await snapshot(t!.placement)).held).toEqual([]); // the short grant was given back
  });

  it('jobs berth refuses are `error`s (not spawn_error), one result per job in file order', async () => {
    s = scratch();
    t = await startServer({ flags: { token: 's3cret' } }); // e.g. the token changed after the up-front check
    const jobs = parseBatch([
      { name: 'a', argv: ['true'] },
      { name: 'b', argv: ['true'] },
      { name: 'c', argv: ['true'] },
    ]);
    const runner = new RemoteRunner(t.address, 'CUDA_VISIBLE_DEVICES');
    const out = new PassThrough();
    out.resume();
    const results = await runBatch(
      jobs,
      runner,
      { pool: null, maxInFlight: 2, backfill: 0, failFast: false, graceMs: 1000, logDir: s.dir },
      new ConsoleReporter(out, false, 3),
    );
    runner.close();
    expect(results.map((r) => [r.index, r.name, r.status])).toEqual([
      [0, 'a', 'error'],
      [1, 'b', 'error'],
      [2, 'c', 'error'],
    ]);
    expect(results[0].error).toMatch(/refused the job \(UNAUTHENTICATED/);
  });

  it('the worker running a job is killed: the job is an error that blames the machine, not the server', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [] });
    const events = watch(t.placement);
    await events.ready;
    const attached = events.next((e) => e.kind === 'worker_attached' && e.machine === 'w1');
    const worker = spawnBerth([
      'worker',
      '--server',
      t.address,
      '--name',
      'w1',
      '--cpus',
      '2',
      '--gpus',
      '0-1',
      '--log-level',
      'warn',
    ]);
    const workerDone = finished(worker);
    await attached;
    events.cancel();
    // bounded: the killed worker's child is orphaned
    const file = s.batch([{ name: 'long', devices: 1, shell: 'sleep 3' }]);
    const d = spawnBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address])]);
    const done = finished(d);
    await waitForLine(d, /^START\s+long\b/);
    worker.kill('SIGKILL');
    await workerDone;
    const r = await done;
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({ long: 'error' });
    expect(r.stdout).toMatch(/ERROR\s+long\s+machine w1 went away, the job's outcome is unknown \(worker w1 went away/);
    expect(r.stdout).not.toMatch(/unreachable/);
  });

  it('a job with retries: 1 whose worker is killed runs again on another worker and passes', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [], flags: { workerHold: 0.3 } });
    const worker = (name: string) =>
      spawnBerth(['worker', '--server', t!.address, '--name', name, '--cpus', '2', '--gpus', '0-1']);
    const w1 = worker('w1');
    const w1Done = finished(w1);
    await waitForLine(w1, /attached to server/);
    const marker = join(s.dir, 'ran-once');
    // bounded: the killed worker's child is orphaned for at most 10 s
    const shell = `if [ -e ${marker} ]; then echo second; exit 0; fi; touch ${marker}; sleep 10`;
    const file = s.batch([{ name: 'long', devices: 1, shell, retries: 1 }]);
    const d = spawnBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address])]);
    const done = finished(d);
    await until(() => existsSync(marker));
    const w2 = worker('w2');
    const w2Done = finished(w2);
    try {
      await waitForLine(w2, /attached to server/);
      w1.kill('SIGKILL');
      await w1Done;
      const r = await done;
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(statuses(r.stdout)).toEqual({ long: 'passed' });
    } finally {
      w2.kill('SIGKILL');
      await w2Done;
    }
  });

  it('a worker that went away blames the machine, not the server', () => {
    const err = { code: GrpcStatus.UNAVAILABLE, details: 'worker wa went away: stream ended' };
    expect(describeCallError('127.0.0.1:50051', err, 'wa')).toMatch(
      /^machine wa went away, the job's outcome is unknown \(worker wa went away: stream ended\)$/,
    );
    expect(describeCallError('127.0.0.1:50051', err)).not.toMatch(/unreachable/);
    expect(
      describeCallError('127.0.0.1:50051', { code: GrpcStatus.UNAVAILABLE, details: 'connect ECONNREFUSED' }),
    ).toMatch(/berth at 127\.0\.0\.1:50051 is unreachable/);
  });
});
