/**
 * Acceptance 11: the same batch gives the same results embedded and through `berth serve` with a
 * real `berth worker` attached (jobs needing devices land on the worker, the only GPU machine).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watch } from '../support/claims.js';
import { finished, spawnBerth } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { dispatch, scratch, statuses, type Scratch } from './support.js';

let s: Scratch | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  s?.cleanup();
  await t?.close();
  s = undefined;
  t = undefined;
});

describe('embedded and --server give the same results', () => {
  it('passed / failed / spawn_error per job alike, and device ids reach the job on the worker', async () => {
    s = scratch();
    const file = s.batch({
      jobs: [
        { name: 'one', devices: 1, argv: ['sh', '-c', 'echo one on {devices} sees $CUDA_VISIBLE_DEVICES'] },
        { name: 'two', devices: 3, argv: ['sh', '-c', 'echo two on {devices} sees $CUDA_VISIBLE_DEVICES'] },
        { name: 'fails', devices: 1, shell: 'echo about to fail; exit 3' },
        { name: 'ghost', devices: 1, argv: ['berth-no-such-program-xyz'] },
        { name: 'cpu', devices: 0, argv: ['true'] },
        { name: 'lines', devices: 1, argv: ['seq', '1', '1000'] },
      ],
    });
    const embedded = await dispatch(file, '--devices', '0-3');
    const logOf = (r: { stdout: string }, label: string) => {
      const dir = /^logs: (\S+)$/m.exec(r.stdout)![1];
      const name = readdirSync(dir).find((f) => f.endsWith(`-${label}.log`));
      if (name === undefined) throw new Error(`no log file for job ${label} in ${dir}`);
      return readFileSync(join(dir, name), 'utf8');
    };
    // both modes: {devices} is the range string, CUDA_VISIBLE_DEVICES the comma list
    expect(logOf(embedded, 'two')).toMatch(/^two on (\d)-(\d) sees \1,\d,\2$/m);

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
      '4',
      '--gpus',
      '0-3',
      '--log-level',
      'warn',
    ]);
    const workerDone = finished(worker);
    await attached;
    // its own log dir, so the remote run's logs are never confused with the embedded run's
    const remote = await dispatch(file, '--server', t.address, '-j', '4', '--log-dir', join(s.dir, 'remote-logs'));
    events.cancel();

    expect(statuses(embedded.stdout)).toEqual({
      one: 'passed',
      two: 'passed',
      fails: 'failed',
      ghost: 'spawn_error',
      cpu: 'passed',
      lines: 'passed',
    });
    expect(statuses(remote.stdout)).toEqual(statuses(embedded.stdout));
    expect(remote.code).toBe(embedded.code);
    expect(remote.code).toBe(1);
    expect(remote.stdout).toContain('about to fail');
    expect(logOf(remote, 'one')).toMatch(/^one on (\d) sees \1$/m);
    expect(logOf(remote, 'two')).toMatch(/^two on (\d)-(\d) sees \1,\d,\2$/m);
    // many lines arrive batched through the worker and the server: the log holds each, in order
    const seq = Array.from({ length: 1000 }, (_, i) => String(i + 1)).join('\n');
    expect(logOf(remote, 'lines')).toContain(seq);
    expect(logOf(embedded, 'lines')).toContain(seq);
    expect((await snapshot(t.placement)).held).toEqual([]); // every claim given back
    worker.kill('SIGTERM');
    await workerDone;
  });
});
