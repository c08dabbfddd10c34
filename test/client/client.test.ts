/**
 * The TypeScript client's own surface beyond the shared case list (cases.test.ts): several server
 * addresses, `await using` and withClaim, AbortSignals, the default warning channel, a lease lost with
 * its worker. Through the real server (in-process on loopback) and, for the worker, a real `berth worker`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BerthClient, type Clamped, InvalidAsk, RemoteError, Unavailable, WorkerGone } from '../../src/client/index.js';
import { startBerthWorker } from '../support/berth-worker.js';
import { closedPort } from '../support/ports.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function serverAndClient(o: { cpus?: number; address?: (a: string) => string } = {}) {
  const s = await startServer({ cpus: o.cpus ?? 2 });
  open.push(() => s.close());
  const warnings: Clamped[] = [];
  const client = new BerthClient({ address: o.address?.(s.address) ?? s.address, onWarning: (w) => warnings.push(w) });
  open.push(() => client.close());
  return { s, client, warnings };
}

describe('BerthClient with several addresses', () => {
  it('skips an address nobody listens on and claims on the next', async () => {
    const dead = `127.0.0.1:${await closedPort()}`;
    const { client } = await serverAndClient({ address: (a) => `${dead},${a}` });
    const lease = await client.claim({ cpus: 1, node: 'study.ha' });
    expect(lease.machine).toBe('engine');
    await lease.release();
    expect((await client.snapshot()).held).toEqual([]);
  });

  it('is Unavailable naming every address when none answers', async () => {
    const a = `127.0.0.1:${await closedPort()}`;
    const b = `127.0.0.1:${await closedPort()}`;
    const client = new BerthClient({ address: `${a},${b}` });
    open.push(() => client.close());
    const err = await client.snapshot().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Unavailable);
    expect((err as Error).message).toContain(`${a}, ${b}`);
  });

  it('refuses a malformed address naming it, before dialling', () => {
    expect(() => new BerthClient({ address: '127.0.0.1:50051,nonsense' })).toThrow(InvalidAsk);
    expect(() => new BerthClient({ address: 'nonsense' })).toThrow(/address: expected host:port.*"nonsense"/);
  });
});

describe('BerthClient leases', () => {
  it('await using releases the claim at the end of the block', async () => {
    const { client } = await serverAndClient();
    let id = '';
    {
      await using lease = await client.claim({ cpus: 2, node: 'study.block' });
      id = lease.claimId;
      expect((await client.snapshot()).held.map((h) => h.claimId)).toEqual([id]);
    }
    // the release was acknowledged before the block ended: nothing is held any more
    expect((await client.snapshot()).held).toEqual([]);
    expect(id).not.toBe('');
  });

  it('withClaim releases when its function throws, and the function error wins', async () => {
    const { client } = await serverAndClient();
    const err = await client
      .withClaim({ cpus: 2, node: 'study.crash' }, () => {
        throw new Error('node blew up');
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('node blew up');
    expect((await client.snapshot()).held).toEqual([]);
    expect(await client.withClaim({ cpus: 1 }, (lease) => lease.allocation.cpus)).toBe(1);
  });

  it('acquire holds two claims at once; release is idempotent', async () => {
    const { client } = await serverAndClient();
    const a = await client.acquire({ cpus: 1, node: 'study.a' });
    const b = await client.acquire({ cpus: 1, node: 'study.b' });
    expect((await client.snapshot()).held).toHaveLength(2);
    await client.release(a);
    await a.release();
    expect((await client.snapshot()).held.map((h) => h.claimId)).toEqual([b.claimId]);
    await b.release();
  });

  it('a hold that protobuf cannot carry is InvalidAsk naming ask.hold_ms, and nothing is claimed', async () => {
    const { client } = await serverAndClient();
    const err = await client.claim({ cpus: 1, holdMs: -5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidAsk);
    expect((err as InvalidAsk).field).toBe('ask.hold_ms');
    expect((await client.snapshot()).held).toEqual([]);
    expect(await client.withClaim({ cpus: 1, holdMs: 30_000 }, (lease) => lease.machine)).toBe('engine');
  });

  it('aborting a waiting claim rejects with the signal reason and leaves no waiter', async () => {
    const { client } = await serverAndClient();
    await using _hog = await client.claim({ cpus: 2, node: 'study.hog' });
    const ac = new AbortController();
    const waiting = client.claim(
      { cpus: 2, node: 'study.late' },
      { signal: ac.signal, onQueued: () => ac.abort('enough') },
    );
    await expect(waiting).rejects.toBe('enough');
    await until(async () => (await client.snapshot()).waiting.length === 0);
  });
});

describe('BerthClient warnings and events', () => {
  it('warns Clamped through process.emitWarning when no onWarning is given', async () => {
    const s = await startServer({ cpus: 2 });
    open.push(() => s.close());
    const client = new BerthClient({ address: s.address });
    open.push(() => client.close());
    const seen: Error[] = [];
    const onWarning = (w: Error) => seen.push(w);
    process.on('warning', onWarning);
    open.push(() => process.off('warning', onWarning));
    await client.withClaim({ cpus: 64, node: 'study.huge' }, () => {});
    await until(() => seen.length > 0);
    expect(seen[0].name).toBe('Clamped');
    expect(seen[0].message).toContain('clamped to the best real machine engine: asked 64 cpu(s)');
  });

  it('events end quietly when their signal aborts', async () => {
    const { client } = await serverAndClient();
    const ac = new AbortController();
    const kinds: string[] = [];
    for await (const e of client.events({ signal: ac.signal })) {
      kinds.push(e.kind);
      if (kinds.length === 1) void client.withClaim({ cpus: 1 }, () => {});
      if (e.kind === 'claim_released') ac.abort();
    }
    expect(kinds).toContain('node_placed');
    expect(kinds.at(-1)).toBe('claim_released');
  });
});

describe('BerthClient with a real berth worker', () => {
  async function withWorker() {
    const { s, client } = await serverAndClient({ cpus: 0 });
    const w = await startBerthWorker(s.address, 'w1', ['--labels', 'w', '--cpus', '2', '--gpus', '']);
    open.push(() => w.stop());
    return { client, child: w.child };
  }

  it('aborting a streamed run cancels its call on the worker', async () => {
    const { client } = await withWorker();
    const ac = new AbortController();
    const source = 'import time\ndef process():\n    print("going", flush=True)\n    time.sleep(60)\n';
    const seen: string[] = [];
    const err = await (async () => {
      for await (const item of client.streamRun({ source, label: 'w', timeoutMs: 60_000 }, { signal: ac.signal })) {
        seen.push(item.$case);
        if (item.$case === 'log') ac.abort(new Error('stop'));
      }
    })().catch((e: unknown) => e);
    expect((err as Error).message).toBe('stop');
    expect(seen.slice(0, 2)).toEqual(['started', 'log']);
    await until(async () => (await client.snapshot()).calls.length === 0);
  });

  it('a lease whose worker leaves aborts its signal and its release throws WorkerGone', async () => {
    const { client, child } = await withWorker();
    const lease = await client.claim({ cpus: 1, label: 'w', policy: 'require', node: 'study.lost' });
    expect(lease.remote).toBe(true);
    child.kill('SIGKILL');
    await until(() => lease.signal.aborted);
    expect(lease.signal.reason).toBeInstanceOf(WorkerGone);
    expect(lease.signal.reason).toBeInstanceOf(RemoteError); // as Python's WorkerGone is both
    await expect(lease.release()).rejects.toBeInstanceOf(WorkerGone);
    expect((await client.snapshot()).held).toEqual([]);
  });

  it('compile checks a source on the worker carrying the label', async () => {
    const { client } = await withWorker();
    const ok = await client.compile({ source: 'def process():\n    return 1\n', label: 'w' });
    expect([ok.checked, ok.ok, ok.worker]).toEqual([true, true, 'w1']);
    const bad = await client.compile({ source: 'def process(:\n', label: 'w' });
    expect([bad.checked, bad.ok, bad.failure?.type]).toEqual([true, false, 'SyntaxError']);
  });
});
