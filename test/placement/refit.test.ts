import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

describe('a waiter is fitted again when the machines change, both ways (SPEC P11)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    const errors = t?.invariantErrors ?? [];
    await t?.close();
    t = undefined;
    expect(errors).toEqual([]);
  });

  it(
    'an 8-GPU ask clamped to 4 while only 4-GPU hosts exist is granted all 8, unclamped, ' +
      'when an 8-GPU host attaches',
    async () => {
      t = await startServer({ cpus: 2 });
      const four = fakeWorker(t.worker, 'four', { cpus: 8, gpuIds: [0, 1, 2, 3] });
      await four.welcomed;
      const holder = claim(t.placement, { cpus: 1, gpus: 4, node: 'holder' });
      expect((await holder.granted).machine).toBe('four');
      const sweep = claim(t.placement, { cpus: 1, gpus: 8, node: 'sweep' });
      const q = await sweep.queued;
      expect(q.detail).toBe('4 gpu(s) and 1 cpu(s)');
      const waiting = (await snapshot(t.placement)).waiting;
      expect(waiting.map((w) => [w.node, w.reason?.wanted?.gpus])).toEqual([['sweep', 4]]);

      const eight = fakeWorker(t.worker, 'eight', { cpus: 16, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] });
      const g = await sweep.granted;
      expect(g.machine).toBe('eight');
      expect(g.allocation?.gpuIds).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(g.clamped).toBe(false);
      await eight.welcomed;
      await Promise.all([sweep.release(), holder.release()]);
      four.close();
      eight.close();
    },
  );

  it(
    'an 8-GPU ask waiting for the busy 8-GPU host is clamped to 4 and granted on the 4-GPU host when the 8-GPU ' +
      'host leaves',
    async () => {
      t = await startServer({ cpus: 2 });
      const four = fakeWorker(t.worker, 'four', { cpus: 8, gpuIds: [0, 1, 2, 3] });
      const eight = fakeWorker(t.worker, 'eight', { cpus: 16, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] });
      await Promise.all([four.welcomed, eight.welcomed]);
      const holder = claim(t.placement, { cpus: 1, gpus: 8, node: 'holder' });
      expect((await holder.granted).machine).toBe('eight');
      const sweep = claim(t.placement, { cpus: 1, gpus: 8, node: 'sweep' });
      expect((await sweep.queued).detail).toBe('8 gpu(s) and 1 cpu(s)');
      eight.close();
      const g = await sweep.granted;
      expect(g.machine).toBe('four');
      expect(g.allocation?.gpuIds).toEqual([0, 1, 2, 3]);
      expect(g.clamped).toBe(true);
      expect((await holder.ended)?.details).toContain('went away');
      await sweep.release();
      four.close();
    },
  );
});
