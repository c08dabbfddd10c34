/**
 * Claims of the TypeScript client that live through a broken stream (issue 19 item 3, SPEC S3), as the
 * Python client's (test/python/test_claim_resume.py): a lease asked with `holdMs` takes its claim back by
 * itself when its Claim stream breaks — a cut link (a TCP proxy on loopback), a `berth serve` SIGKILLed and
 * started again on the same port and state dir — with the same claim id and GPU ids, the Lease object
 * unchanged; one that cannot be taken back aborts its signal with ClaimLost.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, rmSync } from 'node:fs';
import { BerthClient, ClaimLost, type Granted, NotFound, Unavailable } from '../../src/client/index.js';
import { LinkProxy } from '../support/link-proxy.js';
import { RestartableServer } from '../support/restartable-server.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** An in-process server (2 cpus, GPU 0), a client dialling it directly and one through a cuttable proxy. */
async function behindProxy() {
  const s = await startServer({ cpus: 2, gpuIds: [0] });
  open.push(() => s.close());
  const proxy = new LinkProxy(s.address);
  const address = await proxy.start();
  open.push(() => proxy.close());
  const direct = new BerthClient({ address: s.address });
  const client = new BerthClient({ address });
  open.push(
    () => direct.close(),
    () => client.close(),
  );
  return { proxy, direct, client };
}

async function booksFull(c: BerthClient): Promise<boolean> {
  const snap = await c.snapshot();
  const engine = snap.machines.find((m) => m.name === 'engine');
  return engine?.freeGpuIds.join() === '0' && !snap.held.length && !snap.waiting.length;
}

describe('a lease with holdMs', () => {
  it('lives through a cut of its link: the same lease, claim id and GPU, taken back once, then released', async () => {
    const { proxy, direct, client } = await behindProxy();
    const events: string[] = [];
    const lease = await client.claim(
      { cpus: 1, gpus: 1, node: 'train.fit', holdMs: 10_000 },
      { onResuming: () => events.push('resuming'), onResumed: (g) => events.push(`resumed ${g.resumed}`) },
    );
    expect(lease.allocation.gpuIds).toEqual([0]);
    expect(lease.grant.resumeToken.length).toBeGreaterThan(16);
    proxy.cut();
    proxy.restore();
    await until(() => lease.resumes === 1);
    expect(events).toEqual(['resuming', 'resumed true']);
    expect(proxy.connections).toBeGreaterThanOrEqual(2);
    const held = (await direct.snapshot()).held;
    expect(held.map((h) => [h.claimId, h.allocation?.gpuIds, h.awaitingHolder])).toEqual([[lease.claimId, [0], false]]);
    expect(lease.signal.aborted).toBe(false);
    await lease.release(); // on the resumed stream, acknowledged
    expect(await booksFull(direct)).toBe(true);
  });

  it('released while its link is down gives the claim back on the resumed stream once the link returns', async () => {
    const { proxy, direct, client } = await behindProxy();
    const lease = await client.claim({ cpus: 1, gpus: 1, node: 'train.leave', holdMs: 10_000 });
    proxy.cut(); // kept down
    await until(async () => (await direct.snapshot()).held.some((h) => h.awaitingHolder));
    let released = false;
    const release = lease.release().then(() => (released = true));
    expect(released).toBe(false); // the claim is still held, awaiting its holder
    expect((await direct.snapshot()).held.map((h) => h.claimId)).toEqual([lease.claimId]);
    proxy.restore();
    await release;
    expect(lease.resumes).toBe(1);
    expect(await booksFull(direct)).toBe(true);
  });

  it('that cannot be taken back within its hold aborts its signal with ClaimLost, and release throws it', async () => {
    const { proxy, direct, client } = await behindProxy();
    const lease = await client.claim({ cpus: 1, gpus: 1, node: 'train.cut', holdMs: 1000 });
    proxy.cut(); // and kept down: every new connection is reset
    await until(async () => (await direct.snapshot()).held.some((h) => h.awaitingHolder));
    await until(async () => (await direct.snapshot()).held.length === 0); // the hold ran out on the server
    proxy.restore();
    await until(() => lease.signal.aborted);
    const lost = lease.signal.reason;
    expect(lost).toBeInstanceOf(ClaimLost);
    expect((lost as ClaimLost).claimId).toBe(lease.claimId);
    expect((lost as Error).message).toContain('could not be resumed');
    await expect(lease.release()).rejects.toBe(lost);
    expect(await booksFull(direct)).toBe(true);
  });
});

describe('a lease without holdMs', () => {
  it('ends with its stream as before: its signal aborts Unavailable and the server gave the claim back', async () => {
    const { proxy, direct, client } = await behindProxy();
    const lease = await client.claim({ cpus: 1, gpus: 1, node: 'train.plain' });
    proxy.cut();
    await until(() => lease.signal.aborted);
    expect(lease.signal.reason).toBeInstanceOf(Unavailable);
    expect(lease.resumes).toBe(0);
    await until(() => booksFull(direct));
    await expect(lease.release()).rejects.toBeInstanceOf(Unavailable);
  });
});

describe('a lease with holdMs across a server restart', () => {
  it('is taken back from the restarted server (SIGKILL, same port and state dir) with the same GPU', async () => {
    const srv = new RestartableServer(['--cpus', '2', '--gpus', '0-0']);
    open.push(() => srv.close());
    const address = await srv.start();
    const client = new BerthClient({ address });
    open.push(() => client.close());
    const resumed: Granted[] = [];
    const lease = await client.claim(
      { cpus: 1, gpus: 1, node: 'train.restart', holdMs: 30_000 },
      { onResumed: (g) => resumed.push(g) },
    );
    const { claimId } = lease;
    await srv.kill(); // a crash: the journal holds the grant
    await srv.start();
    await until(() => lease.resumes === 1, 30_000);
    expect(resumed.map((g) => [g.claimId, g.allocation?.gpuIds, g.resumed])).toEqual([[claimId, [0], true]]);
    const snap = await client.snapshot();
    expect(snap.held.map((h) => [h.claimId, h.allocation?.gpuIds, h.awaitingHolder])).toEqual([[claimId, [0], false]]);
    await lease.release();
    expect(await booksFull(client)).toBe(true);
  }, 60_000);

  it('restarted without its journal is answered NOT_FOUND: the lease aborts with ClaimLost', async () => {
    const srv = new RestartableServer(['--cpus', '2', '--gpus', '0-0']);
    open.push(() => srv.close());
    const client = new BerthClient({ address: await srv.start() });
    open.push(() => client.close());
    const lease = await client.claim({ cpus: 1, gpus: 1, node: 'train.amnesia', holdMs: 30_000 });
    await srv.kill();
    rmSync(srv.stateDir, { recursive: true, force: true }); // a new server: it knows nothing of the claim
    mkdirSync(srv.stateDir);
    await srv.start();
    await until(() => lease.signal.aborted, 20_000);
    const lost = lease.signal.reason as ClaimLost;
    expect(lost).toBeInstanceOf(ClaimLost);
    expect(lost).toBeInstanceOf(NotFound);
    expect(lost.message).toContain('the server no longer holds it');
    expect(lost.claimId).toBe(lease.claimId);
    await expect(lease.release()).rejects.toBe(lost);
    expect(await booksFull(client)).toBe(true);
  }, 60_000);
});
