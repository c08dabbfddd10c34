/**
 * Fractional and typed GPUs through the real server over gRPC and a real `berth worker --gpu-type a100 --gpu-names
 * MIG-…` (issue 23 items 3–4, SPEC P14): four 0.5 asks fill the worker's two MIG devices, a command run inside a
 * share sees the device's name unchanged in CUDA_VISIBLE_DEVICES and BERTH_GPU_SHARE=0.5, the fifth waits and is
 * granted on a release; 1.5 is INVALID_ARGUMENT naming ask.gpu_share and an unknown type FAILED_PRECONDITION.
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { claim, watch } from '../support/claims.js';
import { finished, spawnBerth } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';

let t: TestServer | undefined;
const ends: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  await t?.close();
  t = undefined;
});

const MIG = ['MIG-0c1d2e3f-aaaa-5555-9999-000000000001', 'MIG-0c1d2e3f-aaaa-5555-9999-000000000002'];

describe('GPU shares and types through a real berth worker', () => {
  it('0.5 shares of typed MIG devices: names and share reach the command; the fifth waits for a release', async () => {
    t = await startServer({ cpus: 1, gpuIds: [] });
    const events = watch(t.placement);
    ends.push(async () => events.cancel());
    await events.ready;
    const attached = events.next((e) => e.kind === 'worker_attached' && e.machine === 'mig');
    const w = spawnBerth([
      'worker',
      '--server',
      t.address,
      '--name',
      'mig',
      '--cpus',
      '4',
      '--gpu-type',
      'a100',
      '--gpu-names',
      MIG.join(','),
    ]);
    const done = finished(w);
    ends.push(async () => {
      w.kill('SIGTERM');
      await done;
    });
    await attached;
    expect(machine(await snapshot(t.placement), 'mig').total).toMatchObject({
      gpuIds: [0, 1],
      gpuType: 'a100',
      gpuNames: MIG,
    });

    const half = { cpus: 0, gpus: 0, gpuShare: 0.5, gpuType: 'a100' };
    const cs = [1, 2, 3, 4].map((i) => claim(t!.placement, { ...half, node: `half.${i}` }));
    for (const c of cs) ends.push(async () => c.call.cancel());
    const gs = await Promise.all(cs.map((c) => c.granted));
    expect(gs.map((g) => g.allocation?.env.CUDA_VISIBLE_DEVICES).sort()).toEqual([MIG[0], MIG[0], MIG[1], MIG[1]]);
    expect(gs.every((g) => g.machine === 'mig' && g.allocation?.gpuShare === 0.5)).toBe(true);
    expect(gs[0].allocation?.env.BERTH_GPU_SHARE).toBe('0.5');

    const name = gs[0].allocation?.env.CUDA_VISIBLE_DEVICES;
    const check = `[ "$CUDA_VISIBLE_DEVICES" = "${name}" ] && [ "$BERTH_GPU_SHARE" = "0.5" ]`;
    const r = await run(t.placement, runRequest({ claimId: gs[0].claimId, argv: ['sh', '-c', check] })).done;
    expect(r.error).toBeNull();
    expect(r.responses.at(-1)?.kind?.$case).toBe('result'); // exit 0: the command saw both

    const fifth = claim(t.placement, { ...half, node: 'half.5' });
    ends.push(async () => fifth.call.cancel());
    const q = await fifth.queued;
    expect(q.detail).toContain('0.5 gpu(s)');
    expect(q.wanted?.gpuShare).toBe(0.5);
    await cs[1].release();
    expect((await fifth.granted).allocation?.env.CUDA_VISIBLE_DEVICES).toBe(gs[1].allocation?.env.CUDA_VISIBLE_DEVICES);
  }, 60_000);

  it('gpu_share 1.5 is INVALID_ARGUMENT naming it; an unknown gpu_type FAILED_PRECONDITION naming it', async () => {
    t = await startServer({ cpus: 1, gpuIds: [0] });
    const bad = claim(t.placement, { cpus: 0, gpuShare: 1.5 });
    const e1 = await bad.ended;
    expect(e1?.code).toBe(status.INVALID_ARGUMENT);
    expect(e1?.details).toMatch(/^ask\.gpu_share: .*\(got 1\.5\)$/);
    const unknown = claim(t.placement, { cpus: 0, gpus: 1, gpuType: 'h100' });
    const e2 = await unknown.ended;
    expect(e2?.code).toBe(status.FAILED_PRECONDITION);
    expect(e2?.details).toContain("ask.gpu_type: no machine has GPUs of type 'h100'");
    expect((await snapshot(t.placement)).held).toEqual([]);
  });
});
