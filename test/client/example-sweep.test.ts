/**
 * The example engine (examples/sweep.ts) runs its sweep with the TypeScript client against a real server
 * and a real `berth worker`: every grid point placed, its metrics streamed, a node's ValueError kept as a
 * RemoteError, the best point printed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startBerthWorker } from '../support/berth-worker.js';
import { finished, ROOT } from '../support/cli.js';
import { startServer } from '../support/server.js';
import { spawn } from 'node:child_process';

const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('the example sweep engine', () => {
  it('runs six points on the engine and a worker, two failing with the node ValueError, and names the best', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const w = await startBerthWorker(s.address, 'w1', ['--cpus', '2', '--gpus', '']);
    open.push(() => w.stop());
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/sweep.ts', s.address, '--parallel', '3'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    open.push(() => child.exitCode === null && child.kill('SIGKILL'));
    const out = await finished(child);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout.match(/done after 5 metrics/g)).toHaveLength(4);
    expect(out.stdout.match(/failed: ValueError: lr 1 diverges/g)).toHaveLength(2);
    expect(out.stdout).toMatch(/ on w1\n/);
    expect(out.stdout).toContain('sweep: 4 points, 2 failed; best {"lr":0.3,"depth":1,"loss":0.1958}');
  });
});
