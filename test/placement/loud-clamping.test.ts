/**
 * Issue 13 items 5 and 6 through the real server and the generated stubs: clamping is never
 * silent (SPEC P5, P11) — Granted and Started say clamped with the amount asked; an ask may choose
 * `on_oversize: fail` (FAILED_PRECONDITION naming the dimension, the ask and the largest machine);
 * Satisfiable answers a structured verdict; events carry typed fields beside the prose detail.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type PlacementServiceClient,
  type SatisfiableResponse,
  Verdict,
  type WatchEventsResponse,
} from '../../generated/ts/berth/v1/placement.js';
import { type Ask, OnOversize, Policy } from '../../generated/ts/berth/v1/resources.js';
import { ask, claim, fakeWorker, watch } from '../support/claims.js';
import { testProvisioner } from '../support/provisioner.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

function satisfiable(client: PlacementServiceClient, a: Partial<Ask>): Promise<SatisfiableResponse> {
  return new Promise((resolve, reject) =>
    client.satisfiable({ ask: ask(a), group: undefined }, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

describe('loud clamping', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a GPU run on a cluster without GPUs says clamped in Started, with the amount asked', async () => {
    t = await startServer({ cpus: 2 });
    const req = runRequest({ argv: ['true'], runId: 'r1', node: 'gpu-node', cpus: 1, gpus: 1 });
    const out = await run(t.placement, req).done;
    expect(out.error).toBeNull();
    const started = out.responses[0].kind;
    expect(started?.$case).toBe('started');
    if (started?.$case !== 'started') return;
    expect(started.value.clamped).toBe(true);
    expect(started.value.asked).toEqual({ cpus: 1, gpus: 1, ramMb: undefined, resources: {} });
    expect(started.value.allocation?.gpuIds).toEqual([]);
    expect(started.value.allocation?.env.CUDA_VISIBLE_DEVICES).toBe('');
  });

  it('a run that fits says not clamped, and asked equals what it holds', async () => {
    t = await startServer({ cpus: 2 });
    const out = await run(t.placement, runRequest({ argv: ['true'], runId: 'r1', node: 'fits', cpus: 2 })).done;
    const started = out.responses[0].kind;
    expect(started?.$case === 'started' && started.value).toMatchObject({
      clamped: false,
      asked: { cpus: 2, gpus: 0 },
      allocation: { cpus: 2 },
    });
  });

  it('Granted of a clamped claim carries clamped and the ask before clamping; Queued carries asked too', async () => {
    t = await startServer({ cpus: 4, gpuIds: [0] });
    const first = claim(t.placement, { cpus: 64, gpus: 4, node: 'big.one' });
    const g = await first.granted;
    expect(g).toMatchObject({ clamped: true, asked: { cpus: 64, gpus: 4 }, allocation: { cpus: 4, gpuIds: [0] } });
    const second = claim(t.placement, { cpus: 64, gpus: 4, node: 'big.two' });
    const q = await second.queued;
    expect(q).toMatchObject({
      wanted: { cpus: 4, gpus: 1 },
      asked: { cpus: 64, gpus: 4 },
      detail: '1 gpu(s) and 4 cpu(s)',
    });
    const [waiting] = (await snapshot(t.placement)).waiting;
    expect(waiting.reason).toMatchObject({ wanted: { cpus: 4, gpus: 1 }, asked: { cpus: 64, gpus: 4 } });
    await first.release();
    await second.granted;
    await second.release();
  });

  it(
    'on_oversize fail: FAILED_PRECONDITION naming the dimension, what was asked and the largest machine; ' +
      'nothing held',
    async () => {
      t = await startServer({ cpus: 2 });
      const worker = fakeWorker(t.worker, 'big-box', { cpus: 16, gpuIds: [0, 1] });
      await worker.welcomed;
      const c = claim(t.placement, { cpus: 4, gpus: 8, node: 'huge', onOversize: OnOversize.ON_OVERSIZE_FAIL });
      const err = (await c.ended) as ServiceError;
      expect(err.code).toBe(status.FAILED_PRECONDITION);
      expect(err.details).toBe(
        'ask.gpus: asked 8 gpu(s) but the largest machine, big-box, has 2 gpu(s) (16 cpu(s)); on_oversize is fail',
      );
      const cpuErr = (await claim(t.placement, { cpus: 32, onOversize: OnOversize.ON_OVERSIZE_FAIL })
        .ended) as ServiceError;
      expect(cpuErr.details).toMatch(/^ask\.cpus: asked 32 cpu\(s\) but the largest machine, big-box, has 16 cpu\(s\)/);
      // The same ask with the default (clamp) runs, clamped.
      const ok = claim(t.placement, { cpus: 4, gpus: 8, node: 'huge' });
      expect(await ok.granted).toMatchObject({ clamped: true, machine: 'big-box', asked: { cpus: 4, gpus: 8 } });
      await ok.release();
      const bad = (await claim(t.placement, { cpus: 1, onOversize: 7 as OnOversize }).ended) as ServiceError;
      expect(bad.code).toBe(status.INVALID_ARGUMENT);
      expect(bad.details).toMatch(/^ask\.on_oversize: unknown value 7/);
      worker.close();
    },
  );

  it(
    'on_oversize fail while waiting: when the only machine that could hold it leaves, ' +
      'the waiter fails instead of being clamped (SPEC P11)',
    async () => {
      t = await startServer({ cpus: 2 });
      const worker = fakeWorker(t.worker, 'wide', { cpus: 8 });
      await worker.welcomed;
      const holder = claim(t.placement, { cpus: 8, node: 'holds.wide' });
      expect((await holder.granted).machine).toBe('wide');
      const strict = claim(t.placement, { cpus: 8, node: 'strict', onOversize: OnOversize.ON_OVERSIZE_FAIL });
      const lenient = claim(t.placement, { cpus: 8, node: 'lenient' });
      await Promise.all([strict.queued, lenient.queued]);
      worker.close();
      const err = (await strict.ended) as ServiceError;
      expect(err.code).toBe(status.FAILED_PRECONDITION);
      expect(err.details).toBe(
        'ask.cpus: asked 8 cpu(s) but the largest machine, engine, has 2 cpu(s) (0 gpu(s)); on_oversize is fail',
      );
      expect(await lenient.granted).toMatchObject({
        machine: 'engine',
        clamped: true,
        asked: { cpus: 8 },
        allocation: { cpus: 2 },
      });
      await lenient.release();
      expect(t.server.context.placer.snapshot().waiting).toEqual([]);
    },
  );

  it('a Run with on_oversize fail answers FAILED_PRECONDITION before anything runs', async () => {
    t = await startServer({ cpus: 2 });
    const req = runRequest({ argv: ['true'], runId: 'r1', node: 'n', cpus: 1, gpus: 1 });
    if (req.placement?.$case === 'ask') req.placement.value.onOversize = OnOversize.ON_OVERSIZE_FAIL;
    const out = await run(t.placement, req).done;
    expect(out.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(out.error?.details).toMatch(/^ask\.gpus: asked 1 gpu\(s\) but the largest machine, engine, has 0 gpu\(s\)/);
    expect(out.responses).toEqual([]);
  });

  it(
    'Satisfiable answers runs now, waits, waits for a provisioner, ' +
      'clamped (with clamped_to and limiting) and impossible',
    async () => {
      const prov = testProvisioner({ cpus: 16, gpus: 2, labels: [] });
      t = await startServer({ cpus: 4, provisioning: prov.make });
      expect(await satisfiable(t.placement, { cpus: 2 })).toEqual({
        waitFor: '',
        verdict: Verdict.VERDICT_RUNS_NOW,
        clampedTo: undefined,
        limiting: '',
        detail: '', // a group's verdict says why (rule G8); an ask's does not
      });
      const held = claim(t.placement, { cpus: 4 });
      await held.granted;
      expect((await satisfiable(t.placement, { cpus: 2 })).verdict).toBe(Verdict.VERDICT_WAITS);
      expect(await satisfiable(t.placement, { cpus: 1, gpus: 1 })).toMatchObject({
        verdict: Verdict.VERDICT_WAITS_FOR_PROVISIONER,
        waitFor: '1 gpu(s) and 1 cpu(s)',
      });
      expect(await satisfiable(t.placement, { cpus: 1, gpus: 64 })).toEqual({
        waitFor: '',
        verdict: Verdict.VERDICT_CLAMPED,
        clampedTo: { cpus: 1, gpus: 0, ramMb: undefined, resources: {} },
        limiting: 'gpus',
        detail: '',
      });
      expect(
        await satisfiable(t.placement, { cpus: 1, gpus: 64, onOversize: OnOversize.ON_OVERSIZE_FAIL }),
      ).toMatchObject({
        verdict: Verdict.VERDICT_IMPOSSIBLE,
        clampedTo: { cpus: 1, gpus: 0, resources: {} },
        limiting: 'gpus',
      });
      await held.release();
    },
  );

  it(
    'a required label whose worker left within the grace: Satisfiable says WAITS and an on_oversize fail ask ' +
      'waits for it (SPEC P3)',
    async () => {
      t = await startServer({ cpus: 2 });
      const w = watch(t.placement);
      await w.ready;
      const worker = fakeWorker(t.worker, 'gpu-box', { cpus: 4, gpuIds: [0] }, ['gpu']);
      await worker.welcomed;
      worker.close();
      await w.next((e) => e.kind === 'worker_detached');
      const gpuAsk = {
        cpus: 1,
        gpus: 1,
        label: 'gpu',
        policy: Policy.POLICY_REQUIRE,
        onOversize: OnOversize.ON_OVERSIZE_FAIL,
      };
      expect(await satisfiable(t.placement, gpuAsk)).toMatchObject({ verdict: Verdict.VERDICT_WAITS, limiting: '' });
      const c = claim(t.placement, { ...gpuAsk, node: 'back.soon' });
      expect((await c.queued).detail).toMatch(
        new RegExp(
          /^1 gpu\(s\) and 1 cpu\(s\): waiting for workers labelled 'gpu' to come back /.source +
            /\(reconnect grace, \d+ s left\)$/.source,
        ),
      );
      const again = fakeWorker(t.worker, 'gpu-box', { cpus: 4, gpuIds: [0] }, ['gpu']);
      expect(await c.granted).toMatchObject({ machine: 'gpu-box', clamped: false });
      await c.release();
      again.close();
      w.cancel();
    },
  );

  it(
    'events carry typed fields: asked and granted amounts, GPU ids, clamped and limiting, fell_back, ' +
      'the Queued reason',
    async () => {
      t = await startServer({ cpus: 2, gpuIds: [0, 1] });
      const w = watch(t.placement);
      await w.ready;
      const ev = (pred: (e: WatchEventsResponse) => boolean) => Promise.resolve(w.seen.find(pred) ?? w.next(pred));
      const big = claim(t.placement, { cpus: 8, gpus: 1, node: 'n.big', runId: 'r' });
      await big.granted;
      const clampedEv = await ev((e) => e.kind === 'node_clamped');
      expect(clampedEv).toMatchObject({
        asked: { cpus: 8, gpus: 1 },
        granted: { cpus: 2, gpus: 1 },
        clamped: true,
        limiting: 'cpus',
        node: 'n.big',
      });
      expect(clampedEv.detail).toBe('1 gpu(s) and 8 cpu(s) → 1 gpu(s) and 2 cpu(s) (best machine: engine)');
      const placed = await ev((e) => e.kind === 'node_placed' && e.node === 'n.big');
      expect(placed).toMatchObject({
        asked: { cpus: 8, gpus: 1 },
        granted: { cpus: 2, gpus: 1 },
        gpuIds: [0],
        clamped: true,
        fellBack: false,
        durationMs: 0,
      });
      const pref = claim(t.placement, { cpus: 1, label: 'tpu', policy: Policy.POLICY_PREFER, node: 'n.pref' });
      await pref.queued;
      const queued = await ev((e) => e.kind === 'node_queued' && e.node === 'n.pref');
      expect(queued).toMatchObject({
        label: 'tpu',
        asked: { cpus: 1, gpus: 0 },
        queued: { detail: '1 cpu(s)', position: 1, bestMachine: 'engine', asked: { cpus: 1, gpus: 0 } },
      });
      await big.release();
      expect((await pref.granted).fellBack).toBe(true);
      const released = await ev((e) => e.kind === 'claim_released' && e.node === 'n.big');
      expect(released).toMatchObject({ outcome: 'released', granted: { cpus: 2, gpus: 1 }, gpuIds: [0] });
      const placedPref = await ev((e) => e.kind === 'node_placed' && e.node === 'n.pref');
      expect(placedPref).toMatchObject({ fellBack: true, label: 'tpu', clamped: false });
      await pref.release();
      w.cancel();
    },
  );
});
