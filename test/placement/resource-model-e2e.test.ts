/**
 * One resource model (issue 23 items 1–2) end to end: a real server over gRPC with workers attached by Hello. A
 * memory-heavy ask lands on the memory-rich machine, small ones do not take it; a named resource ask waits with the
 * Queued detail and is woken by the release of that resource only; a pool license is taken with a machine's
 * resources in one step and comes back on release; the snapshot shows pools and named resources.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker, type ClaimHandle, type FakeWorker } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';

let t: TestServer | undefined;
const open: (ClaimHandle | FakeWorker)[] = [];
afterEach(async () => {
  for (const x of open.splice(0)) 'release' in x ? x.call.cancel() : x.close();
  await t?.close();
  t = undefined;
});

const keep = <T extends ClaimHandle | FakeWorker>(x: T): T => {
  open.push(x);
  return x;
};

describe('one resource model through the real server', () => {
  it('small memory asks fill the memory-poor worker; a memory-heavy ask lands on the memory-rich one', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'rich', { cpus: 4, ramMb: 65_536 })).welcomed;
    await keep(fakeWorker(t.worker, 'poor', { cpus: 4, ramMb: 8_192 })).welcomed;
    for (let i = 0; i < 4; i++) {
      const g = await keep(claim(t.placement, { cpus: 1, ramMb: 1024 })).granted;
      expect(g.machine).toBe('poor');
    }
    const heavy = await keep(claim(t.placement, { cpus: 1, ramMb: 40_960 })).granted;
    expect(heavy.machine).toBe('rich');
    expect(heavy.allocation?.ramMb).toBe(40_960);
  });

  it('a trainer ask waits ("waiting for trainer: 0 of 1 free"), woken by the trainer release only', async () => {
    t = await startServer({ cpus: 0 });
    await keep(fakeWorker(t.worker, 'plain', { cpus: 8 })).welcomed;
    await keep(fakeWorker(t.worker, 'trainer-box', { cpus: 8, resources: { trainer: 1 } })).welcomed;
    const first = keep(claim(t.placement, { cpus: 1, resources: { trainer: 1 } }));
    const g = await first.granted;
    expect(g.machine).toBe('trainer-box');
    expect(g.allocation?.resources).toEqual({ trainer: 1 });
    const second = keep(claim(t.placement, { cpus: 1, resources: { trainer: 1 } }));
    const q = await second.queued;
    expect(q.detail).toContain('waiting for trainer: 0 of 1 free');
    expect(q.wanted?.resources).toEqual({ trainer: 1 });
    // cores released on the plain machine wake no one waiting for trainer
    const cores = keep(claim(t.placement, { cpus: 8 }));
    expect((await cores.granted).machine).toBe('plain');
    await cores.release();
    const s = await snapshot(t.placement);
    expect(s.waiting.map((w) => w.claimId)).toEqual([q.claimId]);
    expect(machine(s, 'trainer-box').total?.resources).toEqual({ trainer: 1 });
    expect(machine(s, 'trainer-box').free?.resources).toEqual({ trainer: 0 });
    await first.release();
    expect((await second.granted).machine).toBe('trainer-box');
  });

  it('a pool license is taken with the machine resources and comes back on release', async () => {
    t = await startServer({ cpus: 0, flags: { pools: 'license/matlab=1' } });
    await keep(fakeWorker(t.worker, 'w', { cpus: 2 })).welcomed;
    const a = keep(claim(t.placement, { cpus: 1, resources: { 'license/matlab': 1 } }));
    expect((await a.granted).allocation?.resources).toEqual({ 'license/matlab': 1 });
    expect((await snapshot(t.placement)).pools).toEqual([{ name: 'license/matlab', total: 1, free: 0 }]);
    const b = keep(claim(t.placement, { cpus: 1, resources: { 'license/matlab': 1 } }));
    expect((await b.queued).detail).toContain('waiting for license/matlab: 0 of 1 free');
    expect(machine(await snapshot(t.placement), 'w').free?.cpus).toBe(1); // nothing of the machine taken
    await a.release();
    expect((await b.granted).allocation?.resources).toEqual({ 'license/matlab': 1 });
  });

  it('finer than 0.0001: INVALID_ARGUMENT naming the field; an unknown name: FAILED_PRECONDITION', async () => {
    t = await startServer({ cpus: 2 });
    const fine = keep(claim(t.placement, { cpus: 1, resources: { trainer: 0.00001 } }));
    const e1 = await fine.ended;
    expect(e1?.code).toBe(3);
    expect(e1?.details).toContain('ask.resources.trainer');
    const unknown = keep(claim(t.placement, { cpus: 1, resources: { dongle: 1 } }));
    const e2 = await unknown.ended;
    expect(e2?.code).toBe(9);
    expect(e2?.details).toContain("ask.resources.dongle: no machine has 'dongle'");
  });
});
