import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim, fakeWorker } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf } from '../support/snapshot.js';

describe('where a claim lands (SPEC P1–P5, P9)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    const errors = t?.invariantErrors ?? [];
    await t?.close();
    t = undefined;
    expect(errors).toEqual([]);
  });

  it('a GPU ask finds the worker that has one by size alone; its GPU is held, then given back', async () => {
    t = await startServer({ cpus: 4 });
    const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0] });
    await w.welcomed;
    const c = claim(t.placement, { cpus: 2, gpus: 1 });
    const g = await c.granted;
    expect(g.machine).toBe('gpu1');
    expect(g.remote).toBe(true);
    expect(g.allocation?.gpuIds).toEqual([0]);
    expect((await freeOf(t.placement, 'gpu1')).gpus).toBe(0);
    await c.release();
    expect(await freeOf(t.placement, 'gpu1')).toEqual({ cpus: 8, gpus: 1 });
    w.close();
  });

  it('an unlabelled CPU ask stays on the engine even when a labelled worker is attached', async () => {
    t = await startServer({ cpus: 4 });
    const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0] }, ['gpu']);
    await w.welcomed;
    const c = claim(t.placement, { cpus: 2 });
    const g = await c.granted;
    expect(g.machine).toBe('engine');
    expect(g.remote).toBe(false);
    await c.release();
    w.close();
  });

  it('require + label lands on the labelled worker', async () => {
    t = await startServer({ cpus: 4 });
    const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0] }, ['gpu']);
    await w.welcomed;
    const c = claim(t.placement, { cpus: 2, label: 'gpu', policy: Policy.POLICY_REQUIRE });
    expect((await c.granted).machine).toBe('gpu1');
    await c.release();
    w.close();
  });

  it('prefer + label with no such worker falls back to the engine, accounted in the books', async () => {
    t = await startServer({ cpus: 4 });
    const c = claim(t.placement, { cpus: 3, label: 'gpu', policy: Policy.POLICY_PREFER });
    const g = await c.granted;
    expect(g.machine).toBe('engine');
    expect(g.allocation?.cpus).toBe(3);
    expect(g.fellBack).toBe(true);
    expect((await freeOf(t.placement, 'engine')).cpus).toBe(1);
    await c.release();
    expect((await freeOf(t.placement, 'engine')).cpus).toBe(4);
  });

  it('clamping: 64 cpus + 4 GPUs on a 2-core engine runs with 2 cores and no GPU, marked clamped', async () => {
    t = await startServer({ cpus: 2 });
    const c = claim(t.placement, { cpus: 64, gpus: 4 });
    const g = await c.granted;
    expect(g.machine).toBe('engine');
    expect(g.allocation?.cpus).toBe(2);
    expect(g.allocation?.gpuIds).toEqual([]);
    expect(g.clamped).toBe(true);
    await c.release();
  });

  it(
    'clamping picks one real machine, GPUs first: 64 cpus + 1 GPU lands on the 4-core GPU box, ' +
      'not the 64-core one',
    async () => {
      t = await startServer({ cpus: 2 });
      const big = fakeWorker(t.worker, 'big', { cpus: 64 });
      const small = fakeWorker(t.worker, 'small-gpu', { cpus: 4, gpuIds: [0] });
      await Promise.all([big.welcomed, small.welcomed]);
      const c = claim(t.placement, { cpus: 64, gpus: 1 });
      const g = await c.granted;
      expect(g.machine).toBe('small-gpu');
      expect(g.allocation?.cpus).toBe(4);
      expect(g.allocation?.gpuIds).toEqual([0]);
      expect(g.clamped).toBe(true);
      await c.release();
      big.close();
      small.close();
    },
  );

  it('the allocation sets OMP_NUM_THREADS, CUDA_VISIBLE_DEVICES and the ask env', async () => {
    t = await startServer({ cpus: 4, gpuIds: [0, 1] });
    const first = claim(t.placement, { cpus: 1, gpus: 1 });
    expect((await first.granted).allocation?.gpuIds).toEqual([0]);
    const c = claim(t.placement, { cpus: 2, gpus: 1, env: { XLA_FLAGS: '--x=false' } });
    const g = await c.granted;
    expect(g.allocation?.gpuIds).toEqual([1]);
    expect(g.allocation?.env).toEqual({ OMP_NUM_THREADS: '2', CUDA_VISIBLE_DEVICES: '1', XLA_FLAGS: '--x=false' });
    const none = claim(t.placement, { cpus: 1 });
    expect((await none.granted).allocation?.env).toMatchObject({ OMP_NUM_THREADS: '1', CUDA_VISIBLE_DEVICES: '' });
    await Promise.all([first.release(), c.release(), none.release()]);
  });

  it('an absent cpus means 1 core; an explicit 0 means none', async () => {
    t = await startServer({ cpus: 4 });
    const dflt = claim(t.placement, {});
    expect((await dflt.granted).allocation?.cpus).toBe(1);
    const zero = claim(t.placement, { cpus: 0 });
    const z = await zero.granted;
    expect(z.allocation?.cpus).toBe(0);
    expect(z.allocation?.env.OMP_NUM_THREADS).toBe('1'); // OpenMP takes positive counts only
    expect((await freeOf(t.placement, 'engine')).cpus).toBe(3);
    await Promise.all([dflt.release(), zero.release()]);
  });
});
