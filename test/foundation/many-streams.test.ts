/**
 * Issue 9 item 3: 1,000 open Claim streams (500 granted, 500 waiting) against the real server print
 * no MaxListenersExceededWarning — no stream adds a listener to a shared signal — and the drain
 * still ends every one of them; the same for 20 attached workers, which are each sent Drain.
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker, type ClaimHandle } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';

describe('many open streams', () => {
  let t: TestServer | undefined;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  afterEach(async () => {
    process.off('warning', onWarning);
    await t?.close();
    t = undefined;
  });

  it(
    '1,000 open Claim streams emit no ' + 'MaxListenersExceededWarning, and the drain ends them all UNAVAILABLE',
    async () => {
      process.on('warning', onWarning);
      t = await startServer({ cpus: 500 });
      const handles: ClaimHandle[] = [];
      for (let i = 0; i < 1000; i++) handles.push(claim(t.placement, { cpus: 1, node: `n${i}` }));
      await Promise.all(handles.slice(0, 500).map((h) => h.granted));
      await Promise.all(handles.slice(500).map((h) => h.queued));
      expect(t.server.context.placer.snapshot().waiting).toHaveLength(500);
      await t.close(500);
      const ends = await Promise.all(handles.map((h) => h.ended));
      await new Promise((r) => setImmediate(r)); // warnings are emitted on a later tick
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
      expect(
        ends.filter((e) => e?.code === status.UNAVAILABLE && e.details.includes('server is draining')),
      ).toHaveLength(1000);
      t = undefined;
    },
  );

  it('20 attached workers emit no MaxListenersExceededWarning, and each is sent Drain', async () => {
    process.on('warning', onWarning);
    t = await startServer({ cpus: 1 });
    const workers = Array.from({ length: 20 }, (_, i) => fakeWorker(t!.worker, `w${i}`, { cpus: 1 }));
    await Promise.all(workers.map((w) => w.welcomed));
    await t.close(500);
    await Promise.all(workers.map((w) => w.ended));
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
    expect(workers.filter((w) => w.frames.some((f) => f.frame?.$case === 'drain'))).toHaveLength(20);
    t = undefined;
  });
});
