import { spawn } from 'node:child_process';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker, watch } from '../support/claims.js';
import { ROOT } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf, snapshot } from '../support/snapshot.js';

describe('every ending gives the claim back (SPEC P8)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    const errors = t?.invariantErrors ?? [];
    await t?.close();
    t = undefined;
    expect(errors).toEqual([]);
  });

  it('cancel, half-close and a killed client process each return the books to 4 cpus / 1 GPU free', async () => {
    t = await startServer({ cpus: 4, gpuIds: [0] });
    const events = watch(t.placement);
    await events.ready;

    const cancelled = claim(t.placement, { cpus: 2, gpus: 1 });
    const g1 = await cancelled.granted;
    let released = events.next((e) => e.kind === 'claim_released' && e.claimId === g1.claimId);
    cancelled.call.cancel();
    await released;
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 4, gpus: 1 });

    const halfClosed = claim(t.placement, { cpus: 2, gpus: 1 });
    const g2 = await halfClosed.granted;
    released = events.next((e) => e.kind === 'claim_released' && e.claimId === g2.claimId);
    halfClosed.call.end();
    await released;
    expect(await halfClosed.ended).toBeNull();
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 4, gpus: 1 });

    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/claim-client.ts', t.address, '2', '1'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const claimId = await new Promise<string>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        const m = /granted (\S+)/.exec(d.toString());
        if (m) resolve(m[1]);
      }),
    );
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 2, gpus: 0 });
    released = events.next((e) => e.kind === 'claim_released' && e.claimId === claimId);
    child.kill('SIGKILL');
    await released;
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 4, gpus: 1 });
    events.cancel();
  });

  it('Release is answered by Released and the stream closes OK', async () => {
    t = await startServer({ cpus: 2 });
    const c = claim(t.placement, { cpus: 1 });
    const g = await c.granted;
    await c.release();
    const last = c.responses[c.responses.length - 1];
    expect(last.kind?.$case).toBe('released');
    expect(last.kind?.$case === 'released' && last.kind.value.claimId).toBe(g.claimId);
  });

  it(
    'a worker leaving ends its claims UNAVAILABLE naming it, ' + 'and a fresh claim for the same ask is not blocked',
    async () => {
      t = await startServer({ cpus: 4 });
      const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0] });
      await w.welcomed;
      const c = claim(t.placement, { cpus: 2, gpus: 1 });
      expect((await c.granted).machine).toBe('gpu1');
      w.close();
      const err = await c.ended;
      expect(err?.code).toBe(status.UNAVAILABLE);
      expect(err?.details).toContain('gpu1');
      expect(err?.details).toContain('went away');
      const again = claim(t.placement, { cpus: 2, gpus: 1 });
      const g = await again.granted;
      expect(g.machine).toBe('engine'); // no GPU left anywhere: clamped, not blocked
      await again.release();
    },
  );

  it('a GPU freed by a cancelled claim is granted to the next ask at once, same id', async () => {
    t = await startServer({ cpus: 4, gpuIds: [3] });
    const a = claim(t.placement, { cpus: 1, gpus: 1 });
    expect((await a.granted).allocation?.gpuIds).toEqual([3]);
    const b = claim(t.placement, { cpus: 1, gpus: 1 });
    await b.queued;
    a.call.cancel();
    expect((await b.granted).allocation?.gpuIds).toEqual([3]);
    await b.release();
  });

  it('contention: 8 claims of 2 cpus on a 4-cpu engine, each held 10 ms, never hold more than 4 cpus', async () => {
    t = await startServer({ cpus: 4 });
    const events = watch(t.placement);
    await events.ready;
    let held = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const c = claim(t!.placement, { cpus: 2 });
        await c.granted;
        held += 2;
        peak = Math.max(peak, held);
        await new Promise((r) => setTimeout(r, 10)); // the lease is held 10 ms by design, not waited on
        held -= 2;
        await c.release();
      }),
    );
    expect(peak).toBeLessThanOrEqual(4);
    expect(events.seen.filter((e) => e.kind === 'node_placed')).toHaveLength(8);
    expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 4, gpus: 0 });
    events.cancel();
  });

  it(
    '200 concurrent GPU claims on 2 GPUs with random releases and cancels: no GPU id ever held twice, ' +
      'books full at the end',
    async () => {
      t = await startServer({ cpus: 4, gpuIds: [0, 1] });
      let seed = 42;
      const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      const holding = new Set<number>();
      const doubled: number[] = [];
      const finished: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        const c = claim(t.placement, { cpus: 0, gpus: 1, node: `n.${i}` });
        const cancelEarly = rand() < 0.2;
        const cancelHeld = rand() < 0.3;
        if (cancelEarly) c.call.cancel();
        finished.push(
          (async () => {
            let g: Awaited<typeof c.granted>;
            try {
              g = await c.granted;
            } catch {
              return; // cancelled before the grant
            }
            const id = g.allocation!.gpuIds[0];
            if (holding.has(id)) doubled.push(id);
            holding.add(id);
            await new Promise((r) => setImmediate(r));
            holding.delete(id);
            if (cancelHeld) {
              c.call.cancel();
              await c.ended;
            } else await c.release();
          })(),
        );
      }
      await Promise.all(finished);
      expect(doubled).toEqual([]);
      const { waiting } = await snapshot(t.placement);
      expect(waiting).toEqual([]);
      expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 4, gpus: 2 });
    },
  );
});

describe('drain (SPEC R3)', () => {
  it('a held claim ends UNAVAILABLE "server is draining" when the server stops, and a waiting one too', async () => {
    const t = await startServer({ cpus: 1 });
    const held = claim(t.placement, { cpus: 1 });
    await held.granted;
    const waiting = claim(t.placement, { cpus: 1 });
    await waiting.queued;
    await t.close(2000);
    for (const c of [held, waiting]) {
      const err = await c.ended;
      expect(err?.code).toBe(status.UNAVAILABLE);
      expect(err?.details).toContain('draining');
    }
  });
});
