/**
 * Preemption seen from the TypeScript client (SPEC Q2): a lease hears the notice (`onPreempting`, `lease.preempted`)
 * and may give the claim back within its grace; one berth releases at the grace's end aborts its `signal` with
 * Preempted and `release()` throws it; `priority` / `priorityClass` reach the server, a bad priority is InvalidAsk
 * naming `ask.priority` before anything is sent. Through the real server on loopback with a config file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BerthClient, InvalidAsk, Preempted, type Preempting } from '../../src/client/index.js';
import { startServer } from '../support/server.js';

const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A 1-core server whose class urgent (100) may preempt the default class batch (0), with `grace` seconds. */
async function serve(grace: number): Promise<BerthClient> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-client-preempt-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, 'priority_classes:\n  urgent: { value: 100 }\n  batch: { value: 0, default: true }\n');
  const s = await startServer({ cpus: 1, flags: { config, preemptionGrace: grace } });
  open.push(() => s.close());
  const client = new BerthClient({ address: s.address });
  open.push(() => client.close());
  return client;
}

describe('a preempted lease (TypeScript client)', () => {
  it('hears the notice and gives the claim back in its grace: the urgent claim gets the core', async () => {
    const client = await serve(60);
    let heard!: (n: Preempting) => void;
    const notice = new Promise<Preempting>((r) => (heard = r));
    const low = await client.claim({ cpus: 1, node: 'low' }, { onPreempting: (n) => heard(n) });
    const urgent = client.claim({ cpus: 1, node: 'urgent', priorityClass: 'urgent' });
    const n = await notice;
    expect(n).toMatchObject({ byPriority: 100, graceMs: 60_000, machine: 'engine' });
    expect(low.preempted).toEqual(n);
    await low.release(); // within the grace: no error
    const u = await urgent;
    expect(u.claimId).toBe(n.byClaimId);
    await u.release();
  });

  it("onPreempt 'cancel', not given back in the grace: berth releases it, its signal aborts with Preempted, release() throws it", async () => {
    const client = await serve(0.2);
    const low = await client.claim({ cpus: 1, node: 'low', onPreempt: 'cancel' });
    const urgent = await client.claim({ cpus: 1, node: 'urgent', priority: 100, priorityClass: 'urgent' });
    await new Promise((r) => (low.signal.aborted ? r(undefined) : low.signal.addEventListener('abort', r)));
    expect(low.signal.reason).toBeInstanceOf(Preempted);
    await expect(low.release()).rejects.toThrow(
      `claim ${low.claimId} released (preempted by claim ${urgent.claimId} of priority 100)`,
    );
    await urgent.release();
  });

  it('requeue (the default): not given back in the grace, the same lease waits again and is granted again when the room returns', async () => {
    const client = await serve(0.2);
    const heard: string[] = [];
    let requeued!: () => void;
    const waitsAgain = new Promise<void>((r) => (requeued = r));
    const low = await client.claim(
      { cpus: 1, node: 'low' },
      {
        onPreempting: () => heard.push('preempting'),
        onRequeued: (q) => {
          heard.push(`requeued ${q.claimId}`);
          requeued();
        },
        onRegranted: (g) => heard.push(`regranted ${g.claimId}`),
      },
    );
    const first = low.claimId;
    const urgent = await client.claim({ cpus: 1, node: 'urgent', priorityClass: 'urgent' });
    await waitsAgain;
    const waiting = low.granted(); // pending while it waits again
    expect(low.requeued?.detail).toContain(`preempted by claim ${urgent.claimId} of priority 100`);
    expect(low.signal.aborted).toBe(false); // the lease goes on: it waits again on its stream
    await urgent.release();
    const again = await waiting;
    expect(again.claimId).not.toBe(first);
    expect(low.claimId).toBe(again.claimId);
    expect(heard).toEqual(['preempting', `requeued ${again.claimId}`, `regranted ${again.claimId}`]);
    await low.release(); // an ordinary lease again
  });

  it('makeRoom() after the notice hands the core over at once; release() while it waits again ends the lease quietly', async () => {
    const client = await serve(60);
    let heard!: () => void;
    const notice = new Promise<void>((r) => (heard = r));
    let requeued!: () => void;
    const waitsAgain = new Promise<void>((r) => (requeued = r));
    const low = await client.claim(
      { cpus: 1, node: 'low' },
      { onPreempting: () => heard(), onRequeued: () => requeued() },
    );
    const urgent = client.claim({ cpus: 1, node: 'urgent', priorityClass: 'urgent' });
    await notice;
    low.makeRoom(); // not after 60 s
    const u = await urgent;
    await waitsAgain;
    const pending = low.granted();
    await low.release(); // while waiting again: nothing held, no error
    expect(low.signal.aborted).toBe(false);
    await expect(pending).rejects.toThrow(/released while it waited again/); // not left pending for ever
    await u.release();
  });

  it('a Run whose own claim is preempted yields `preempting` from streamRun, then throws Preempted', async () => {
    const client = await serve(0.2);
    const items: string[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const ran = (async () => {
      for await (const item of client.streamRun({ command: ['sleep', '30'], cpus: 1, node: 'sweep' })) {
        items.push(item.$case);
        if (item.$case === 'started') started();
      }
    })();
    ran.catch(() => {});
    await running;
    const urgent = await client.claim({ cpus: 1, node: 'urgent', priorityClass: 'urgent' });
    await expect(ran).rejects.toBeInstanceOf(Preempted);
    expect(items).toEqual(['started', 'preempting']);
    await urgent.release();
  });

  it('a priority out of range is InvalidAsk naming ask.priority, before anything is sent', async () => {
    const client = await serve(60);
    await expect(client.claim({ cpus: 1, priority: 2e9 })).rejects.toThrow(InvalidAsk);
    await expect(client.claim({ cpus: 1, priority: 1.5 })).rejects.toThrow(/ask\.priority: a whole number/);
    expect((await client.snapshot()).waiting).toEqual([]);
  });
});
