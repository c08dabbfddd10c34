import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker, watch } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf, snapshot } from '../support/snapshot.js';

describe('waiting that says so (SPEC P6, P7)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    const errors = t?.invariantErrors ?? [];
    await t?.close();
    t = undefined;
    expect(errors).toEqual([]);
  });

  it(
    'busy engine: B is queued with "2 cpu(s)", listed waiting, ' + 'announced once, and granted when A releases',
    async () => {
      t = await startServer({ cpus: 2 });
      const events = watch(t.placement);
      await events.ready;
      const a = claim(t.placement, { cpus: 2, node: 'study.a' });
      await a.granted;
      const b = claim(t.placement, { cpus: 2, node: 'study.b' });
      const q = await b.queued;
      expect(q.detail).toContain('2 cpu(s)');
      expect(b.responses.some((r) => r.kind?.$case === 'granted')).toBe(false);
      const s = await snapshot(t.placement);
      expect(s.waiting.map((w) => w.node)).toEqual(['study.b']);
      expect(s.waiting[0].reason?.wanted?.cpus).toBe(2);
      expect(s.waiting[0].reason?.machinesAble).toBe(1);
      const placedB = events.next((e) => e.kind === 'node_placed' && e.node === 'study.b');
      await a.release();
      expect((await b.granted).machine).toBe('engine');
      await placedB;
      expect(events.seen.filter((e) => e.kind === 'node_queued' && e.node === 'study.b')).toHaveLength(1);
      expect((await snapshot(t.placement)).waiting).toEqual([]);
      await b.release();
      events.cancel();
    },
  );

  it(
    'attach and release both wake waiters: a GPU ask clamped before the worker exists, ' +
      'then waits for its busy GPU',
    async () => {
      t = await startServer({ cpus: 4 });
      const clamped = claim(t.placement, { cpus: 1, gpus: 1 });
      const g0 = await clamped.granted;
      expect(g0.machine).toBe('engine');
      expect(g0.clamped).toBe(true);
      const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0] });
      await w.welcomed;
      const holder = claim(t.placement, { cpus: 1, gpus: 1 });
      expect((await holder.granted).machine).toBe('gpu1');
      const waiter = claim(t.placement, { cpus: 1, gpus: 1 });
      await waiter.queued;
      await holder.release();
      const g = await waiter.granted;
      expect(g.machine).toBe('gpu1');
      expect(g.allocation?.gpuIds).toEqual([0]);
      expect(g.clamped).toBe(false);
      await Promise.all([waiter.release(), clamped.release()]);
      w.close();
    },
  );

  it('a waiter never holds back what it does not need: a GPU-only waiter lets a CPU ask through', async () => {
    t = await startServer({ cpus: 2, gpuIds: [0] });
    const x = claim(t.placement, { cpus: 1, gpus: 1 });
    await x.granted;
    const y = claim(t.placement, { cpus: 0, gpus: 1 });
    await y.queued;
    const z = claim(t.placement, { cpus: 1 });
    expect((await z.granted).allocation?.cpus).toBe(1);
    await x.release();
    expect((await y.granted).allocation?.gpuIds).toEqual([0]);
    await Promise.all([y.release(), z.release()]);
  });

  it(
    'no starvation: an 8-cpu ask is granted once the claims held before it are released, ' +
      'though 1-cpu asks keep arriving',
    async () => {
      t = await startServer({ cpus: 8 });
      const small = [1, 2, 3].map((i) => claim(t!.placement, { cpus: 1, node: `held.${i}` }));
      await Promise.all(small.map((c) => c.granted));
      const big = claim(t.placement, { cpus: 8, node: 'big' });
      await big.queued;
      const order: string[] = [];
      big.granted.then(
        () => order.push('big'),
        () => {},
      );
      const later = [1, 2, 3, 4, 5].map((i) => claim(t!.placement, { cpus: 1, node: `later.${i}` }));
      for (const c of later) {
        c.granted.then(
          () => order.push('later'),
          () => {},
        );
        await c.queued;
      }
      for (const c of small) await c.release();
      await big.granted;
      expect(order).toEqual(['big']);
      await big.release();
      await Promise.all(later.map((c) => c.granted));
      expect(order.slice(0, 1)).toEqual(['big']);
      await Promise.all(later.map((c) => c.release()));
      expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 8, gpus: 0 });
    },
  );

  it(
    'no head-of-line blocking across machines: a claim waiting for the engine does not hold up one a worker ' +
      'can grant',
    async () => {
      t = await startServer({ cpus: 2, flags: { reconnectGrace: 0 } }); // an unknown label fails at once
      const w = fakeWorker(t.worker, 'w1', { cpus: 2 }, ['cpu']);
      await w.welcomed;
      const a = claim(t.placement, { cpus: 2 });
      expect((await a.granted).machine).toBe('engine');
      const onEngine = claim(t.placement, { cpus: 2, label: 'nope', policy: 2 });
      // 'nope' is carried by no machine: rejected at once, not queued
      expect((await onEngine.ended)?.details).toContain("'nope'");
      const b = claim(t.placement, { cpus: 2 });
      expect((await b.granted).machine).toBe('w1');
      await Promise.all([a.release(), b.release()]);
      w.close();
    },
  );

  it('a client disconnecting while queued leaves the waiting list at once and is never granted', async () => {
    t = await startServer({ cpus: 1 });
    const events = watch(t.placement);
    await events.ready;
    const a = claim(t.placement, { cpus: 1 });
    await a.granted;
    const b = claim(t.placement, { cpus: 1, node: 'gone.b' });
    await b.queued;
    const abandoned = events.next((e) => e.kind === 'node_abandoned' && e.node === 'gone.b');
    b.call.cancel();
    await abandoned;
    expect((await snapshot(t.placement)).waiting).toEqual([]);
    await a.release();
    const c = claim(t.placement, { cpus: 1, node: 'next.c' });
    expect((await c.granted).machine).toBe('engine');
    expect(events.seen.some((e) => e.kind === 'node_placed' && e.node === 'gone.b')).toBe(false);
    await c.release();
    events.cancel();
  });
});
