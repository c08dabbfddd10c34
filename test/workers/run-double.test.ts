/**
 * Issue #4 acceptance 1–10 through the real server over real gRPC, with a test-double worker
 * speaking WorkerStream with the generated client.
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { kinds, run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { TestWorker } from '../support/test-worker.js';
import { until } from '../support/until.js';
import { snapshot } from '../support/snapshot.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function server(flags: Record<string, unknown> = {}): Promise<TestServer> {
  const s = await startServer({ cpus: 2, flags });
  open.push(() => s.close());
  return s;
}
async function worker(
  s: TestServer,
  name: string,
  o: { labels?: string[]; cpus?: number; maxParallel?: number } = {},
): Promise<TestWorker> {
  const w = await TestWorker.attach(s.address, {
    name,
    labels: o.labels ?? ['gpu'],
    cpus: o.cpus ?? 4,
    maxParallel: o.maxParallel ?? 0,
  });
  open.push(() => w.close());
  return w;
}

describe('Run on a remote worker (test double)', () => {
  it('1–2: the call reaches the worker with its source, kwargs and call id; the result comes back', async () => {
    const s = await server();
    const w = await worker(s, 'gpu1');
    const source = 'def process(x):\n    return {"out": x + 1}\n';
    const r = run(
      s.placement,
      runRequest({ runId: 'r1', flow: 'flow', node: 'node', label: 'gpu', source, kwargs: { x: 1 } }),
    );
    const call = await w.next('call');
    expect(call.callId).toBe('r1:flow.node');
    expect(call.payload).toEqual({ $case: 'source', value: { source, kwargs: { x: 1 } } });
    w.result(call.callId, { out: 2 });
    const o = await r.done;
    expect(o.error).toBeNull();
    expect(kinds(o)).toEqual(['started', 'result']);
    expect(terminal(o)?.value).toEqual({ callId: 'r1:flow.node', value: { out: 2 } });
    expect(o.responses[0].kind).toMatchObject({ $case: 'started', value: { callId: 'r1:flow.node', machine: 'gpu1' } });
  });

  it('3: a metric and a heartbeat then the result: the caller sees exactly the metric, then the result', async () => {
    const s = await server();
    const w = await worker(s, 'gpu1');
    const r = run(s.placement, runRequest({ label: 'gpu' }));
    const { callId } = await w.next('call');
    w.send({
      $case: 'event',
      value: { callId, kind: { $case: 'metric', value: { name: 'loss', value: 1.0 } }, seq: 0 },
    });
    w.send({ $case: 'heartbeat', value: { callId, warmPools: undefined } });
    w.result(callId, 7);
    const o = await r.done;
    expect(kinds(o)).toEqual(['started', 'event', 'result']);
    expect(o.responses[1].kind).toEqual({
      $case: 'event',
      value: { callId, kind: { $case: 'metric', value: { name: 'loss', value: 1.0 } }, seq: 1 },
    });
  });

  it("4: the worker's failure reaches the caller with its type, message and traceback", async () => {
    const s = await server();
    const w = await worker(s, 'gpu1');
    const r = run(s.placement, runRequest({ label: 'gpu' }));
    const { callId } = await w.next('call');
    w.failure({ callId, type: 'ValueError', message: 'bad input', traceback: 'tb' });
    const o = await r.done;
    expect(o.error).toBeNull();
    expect(terminal(o)).toEqual({
      $case: 'failure',
      value: { callId, type: 'ValueError', message: 'bad input', traceback: 'tb' },
    });
  });

  it(
    '5: the worker dropping mid-call ends the Run once the default 2 s worker hold ran out (within 3 s) with ' +
      'UNAVAILABLE "went away", not at its 30 s timeout',
    async () => {
      const s = await server();
      const w = await worker(s, 'gpu1');
      const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 30_000 }));
      await w.next('call');
      const dropped = Date.now();
      w.drop();
      const o = await r.done;
      expect(Date.now() - dropped).toBeLessThan(3000);
      expect(o.error?.code).toBe(status.UNAVAILABLE);
      expect(o.error?.details).toContain('went away');
      const snap = await snapshot(s.placement);
      expect(snap.machines.map((m) => m.name)).not.toContain('gpu1');
    },
  );

  it(
    '6: a worker silent past a 300 ms timeout gives ' + 'DEADLINE_EXCEEDED and receives a Cancel for the call',
    async () => {
      const s = await server();
      const w = await worker(s, 'gpu1');
      const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 300 }));
      const { callId } = await w.next('call');
      const o = await r.done;
      expect(o.error?.code).toBe(status.DEADLINE_EXCEEDED);
      const cancel = await w.next('cancel');
      expect(cancel.callId).toBe(callId);
      w.failure({ callId, type: 'Cancelled', message: cancel.reason, traceback: '' });
    },
  );

  it(
    '7: a required label no worker carries fails at once naming it (no restart grace); ' +
      'Compile against it is "not checked"',
    async () => {
      const s = await server({ reconnectGrace: 0 });
      await worker(s, 'gpu1');
      const started = Date.now();
      const o = await run(s.placement, runRequest({ label: 'tpu' })).done;
      expect(o.error?.code).toBe(status.FAILED_PRECONDITION);
      expect(o.error?.details).toContain('tpu');
      expect(Date.now() - started).toBeLessThan(2000);
      const c = await new Promise<{ checked: boolean; detail: string }>((resolve, reject) =>
        s.placement.compile(
          { label: 'tpu', flow: 'flow', node: 'node', source: 'def process():\n    return 1\n' },
          (e, res) => (e ? reject(e) : resolve(res)),
        ),
      );
      expect(c.checked).toBe(false);
      expect(c.detail).toContain('not checked');
    },
  );

  it(
    '8: a second gpu1 replaces the first: the old stream ends FAILED_PRECONDITION, its call fails UNAVAILABLE, ' +
      'new calls go to the new one, one gpu1 listed',
    async () => {
      const s = await server();
      const first = await worker(s, 'gpu1');
      const r1 = run(s.placement, runRequest({ runId: 'a', label: 'gpu' }));
      await first.next('call');
      const second = await worker(s, 'gpu1');
      const o1 = await r1.done;
      expect(o1.error?.code).toBe(status.UNAVAILABLE);
      expect(await first.waitEnded()).toMatchObject({
        code: status.FAILED_PRECONDITION,
        details: expect.stringContaining('replaced by a new stream under the same name'),
      });
      const r2 = run(s.placement, runRequest({ runId: 'b', label: 'gpu' }));
      const call = await second.next('call');
      expect(call.callId).toBe('b:flow.node');
      second.result(call.callId, 1);
      expect((await r2.done).error).toBeNull();
      expect(first.calls.map((c) => c.callId)).toEqual(['a:flow.node']);
      const snap = await snapshot(s.placement);
      expect(snap.machines.filter((m) => m.name === 'gpu1')).toHaveLength(1);
    },
  );

  it("9: Cancel(run-a) cancels only run-a's call: one Cancel frame, run-a CANCELLED, run-b completes", async () => {
    const s = await server();
    const w = await worker(s, 'gpu1');
    const a = run(s.placement, runRequest({ runId: 'run-a', label: 'gpu' }));
    const b = run(s.placement, runRequest({ runId: 'run-b', label: 'gpu' }));
    await w.next('call', (c) => c.runId === 'run-a');
    await w.next('call', (c) => c.runId === 'run-b');
    const counts = await new Promise<{ calls: number; claims: number }>((resolve, reject) =>
      s.placement.cancel({ runId: 'run-a' }, (e, res) => (e ? reject(e) : resolve(res))),
    );
    expect(counts).toEqual({ calls: 1, claims: 0 });
    expect((await a.done).error?.code).toBe(status.CANCELLED);
    const cancel = await w.next('cancel');
    expect(cancel.callId).toBe('run-a:flow.node');
    w.failure({ callId: 'run-a:flow.node', type: 'Cancelled', message: 'cancelled', traceback: '' });
    w.result('run-b:flow.node', 'b done');
    const ob = await b.done;
    expect(ob.error).toBeNull();
    expect(terminal(ob)?.value).toMatchObject({ value: 'b done' });
    expect(w.cancels.map((c) => c.callId)).toEqual(['run-a:flow.node']);
  });

  it('10a: with max_parallel 2 a third concurrent call waits for a slot and runs when one ends', async () => {
    const s = await server();
    const w = await worker(s, 'gpu1', { maxParallel: 2, cpus: 8 });
    const runs = ['n1', 'n2', 'n3'].map((node) => run(s.placement, runRequest({ node, label: 'gpu' })));
    await w.next('call', (c) => c.node === 'n1');
    await w.next('call', (c) => c.node === 'n2');
    const snap = await snapshot(s.placement);
    expect(snap.calls).toHaveLength(2);
    expect(w.calls).toHaveLength(2);
    w.result('r1:flow.n1', 1);
    const third = await w.next('call', (c) => c.node === 'n3');
    w.result('r1:flow.n2', 2);
    w.result(third.callId, 3);
    for (const r of runs) expect((await r.done).error).toBeNull();
  });

  it('10c: Cancel reaches a call that holds its claim but waits for a worker slot', async () => {
    const s = await server();
    const w = await worker(s, 'gpu1', { maxParallel: 1, cpus: 8 });
    const first = run(s.placement, runRequest({ runId: 'busy', label: 'gpu' }));
    await w.next('call');
    const queued = run(s.placement, runRequest({ runId: 'queued', label: 'gpu' }));
    await until(() => s.server.context.placer.snapshot().held.length === 2);
    const counts = await new Promise<{ calls: number; claims: number }>((resolve, reject) =>
      s.placement.cancel({ runId: 'queued' }, (e, res) => (e ? reject(e) : resolve(res))),
    );
    expect(counts).toEqual({ calls: 1, claims: 0 });
    expect((await queued.done).error?.code).toBe(status.CANCELLED);
    w.result('busy:flow.node', 1);
    expect((await first.done).error).toBeNull();
    expect(w.calls.map((c) => c.runId)).toEqual(['busy']);
  });

  it(
    '10b: four 2-cpu nodes on a 4-cpu worker with max_parallel 4: never more than 4 cpus in flight, ' +
      'OMP_NUM_THREADS=2, no deadlock',
    async () => {
      const s = await server();
      const w = await worker(s, 'gpu1', { maxParallel: 4, cpus: 4 });
      let inFlight = 0;
      let maxCpus = 0;
      const answered = new Set<string>();
      const runs = ['a', 'b', 'c', 'd'].map((node) => run(s.placement, runRequest({ node, label: 'gpu', cpus: 2 })));
      const all = Promise.all(runs.map((r) => r.done));
      // Answer each call as it arrives, a moment later, tracking cpus in flight.
      for (let handled = 0; handled < 4; handled++) {
        const call = await w.next('call', (c) => !answered.has(c.callId));
        answered.add(call.callId);
        inFlight += call.allocation!.cpus;
        maxCpus = Math.max(maxCpus, inFlight);
        expect(call.allocation!.env.OMP_NUM_THREADS).toBe('2');
        setTimeout(() => {
          inFlight -= call.allocation!.cpus;
          w.result(call.callId, call.node);
        }, 20);
      }
      const outcomes = await all;
      expect(outcomes.every((o) => o.error === null)).toBe(true);
      expect(maxCpus).toBeLessThanOrEqual(4);
    },
  );
});
