/**
 * The engine host's GPU type (issue 23 item 4) through a real `berth serve`: `--gpu-type a100` with `--gpus 0-1`
 * lets an ask naming gpu_type a100 land on the engine host; one naming another type fails FAILED_PRECONDITION
 * listing the types there are; `--gpu-type` without GPUs exits 2 saying so.
 */
import { credentials, status } from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim } from '../support/claims.js';
import { runBerth, spawnBerth, waitForLine } from '../support/cli.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('the engine host with --gpu-type', () => {
  it('holds asks for its type; another type fails at once naming the types there are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-gpu-type-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const args = ['serve', '--listen', '127.0.0.1:0', '--state-dir', dir, '--cpus', '2', '--gpus', '0-1'];
    const child = spawnBerth([...args, '--gpu-type', 'a100']);
    const exited = new Promise((r) => child.once('exit', r));
    open.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    });
    const line = await waitForLine(child, /"msg":"berth serving"/);
    const placement = new PlacementServiceClient(String(JSON.parse(line).address), credentials.createInsecure());
    open.push(() => placement.close());

    const a100 = claim(placement, { cpus: 1, gpus: 1, gpuType: 'a100' });
    open.push(() => a100.call.cancel());
    const g = await a100.granted;
    expect(g.machine).toBe('engine');
    expect(g.allocation?.gpuIds).toHaveLength(1);

    const h100 = claim(placement, { cpus: 1, gpus: 1, gpuType: 'h100' });
    const err = await h100.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toMatch(/^ask\.gpu_type: no machine has GPUs of type 'h100'.*types here: a100/);
  });

  it('--gpu-type without GPUs exits 2 naming the flag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-gpu-type-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const r = await runBerth([
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--state-dir',
      dir,
      '--gpus',
      '',
      '--gpu-type',
      'a100',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--gpu-type a100: the engine host has no GPUs (give --gpus, e.g. 0-3)');
  });
});
