/**
 * Leadership and fencing on a real etcd (SPEC S7, issue 20): one leader per cluster with an epoch, standbys that
 * know its address, hand-over on resign, a leader cut off from etcd that stops acting before its lease can expire
 * and before anyone else leads, and store writes conditioned on the epoch (a deposed leader's are refused).
 */
import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Leadership } from '../../src/ha/leadership.js';
import { EtcdStore } from '../../src/journal/etcd-store.js';
import { etcdMissing, startEtcd, type TestEtcd } from '../support/etcd.js';
import { LinkProxy } from '../support/link-proxy.js';

const missing = etcdMissing();
const inCI = process.env.CI === 'true';
const describeEtcd = missing && !inCI ? describe.skip : describe;
if (missing && !inCI) console.warn(`leadership.test.ts skipped: ${missing} (in CI these tests run)`);

let etcd: TestEtcd;
beforeAll(async () => {
  if (!missing || inCI) etcd = await startEtcd();
}, 30_000);
afterAll(async () => etcd?.stop());

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

let clusters = 0;
/** A fresh cluster prefix per test: tests share one etcd. */
const cluster = () => `/berth-test/c${++clusters}-${process.pid}`;

/** A candidate dialling `endpoint` (etcd itself, or a proxy in front of it). */
function candidate(prefix: string, advertise: string, endpoint = etcd.endpoint, ttlMs = 2000): Leadership {
  const connection = { hosts: [`http://${endpoint}`] };
  const client = new Etcd3({ ...connection, dialTimeout: 500 });
  const l = new Leadership({ client, connection, prefix, advertise, ttlMs, marginMs: 800 });
  open.push(async () => {
    await l.resign();
    client.close();
  });
  return l;
}

const once = <T>(l: Leadership, event: string) => new Promise<T>((resolve) => l.once(event, resolve));

describeEtcd('leadership on etcd (SPEC S7)', () => {
  it(
    'two candidates: the first leads with an epoch, the second is a standby that knows its address; on resign ' +
      'the standby leads with a higher epoch',
    async () => {
      const prefix = cluster();
      const a = candidate(prefix, 'a:1');
      const aLeads = once<number>(a, 'leader');
      await a.start();
      expect(await aLeads).toBe(a.epoch);
      expect(a.acting).toBe(true);
      const b = candidate(prefix, 'b:2');
      const bStandby = once<string>(b, 'standby');
      await b.start();
      expect(await bStandby).toBe('a:1');
      expect(b.acting).toBe(false);
      const bLeads = once<number>(b, 'leader');
      await a.resign();
      expect(await bLeads).toBeGreaterThan(a.epoch);
      expect(b.leaderAddress).toBe('b:2');
      expect(a.acting).toBe(false);
    },
  );

  it('a leader cut off from etcd stops acting before its lease can expire, so before the standby leads; its ' +
    'store writes are refused from then on and the new leader writes under its own epoch', async () => {
    const prefix = cluster();
    const proxy = new LinkProxy(etcd.endpoint);
    const via = await proxy.start();
    open.push(() => proxy.close());
    const a = candidate(prefix, 'a:1', via);
    const aLeads = once(a, 'leader');
    await a.start();
    await aLeads;
    const b = candidate(prefix, 'b:2');
    await b.start();
    const order: string[] = [];
    const aDeposed = once<string>(a, 'deposed').then((why) => (order.push('a deposed'), why));
    const bLeads = once<number>(b, 'leader').then((epoch) => (order.push('b leads'), epoch));
    const aStore = new EtcdStore(etcd.client, prefix, etcd.endpoint, () =>
      a.acting ? { key: a.key, epoch: a.epoch } : undefined,
    );
    await aStore.write([{ key: 'claim/1', value: { by: 'a' } }]);
    proxy.cut();
    expect(await aDeposed).toMatch(/no keep-alive succeeded/);
    await expect(aStore.write([{ key: 'claim/2', value: { by: 'a' } }])).rejects.toThrow(/not the leader/);
    // Even a write that skips the deadline check (a stale fence) is refused by etcd once b leads.
    const stale = new EtcdStore(etcd.client, prefix, etcd.endpoint, () => ({ key: a.key, epoch: a.epoch }));
    const epoch = await bLeads;
    expect(order).toEqual(['a deposed', 'b leads']);
    await expect(stale.write([{ key: 'claim/3', value: { by: 'a' } }])).rejects.toThrow(/no longer the leader/);
    const bStore = new EtcdStore(etcd.client, prefix, etcd.endpoint, () => ({ key: b.key, epoch }));
    await bStore.write([{ key: 'claim/4', value: { by: 'b' } }]);
    expect(await bStore.load()).toEqual([
      ['claim/1', { by: 'a' }],
      ['claim/4', { by: 'b' }],
    ]);
  }, 20_000);

  it(
    'the store: concurrent writes, each one transaction, all or none; deletes; a batch over 128 ops or over the ' +
      'request size is refused naming the limits, and nothing of it is written',
    async () => {
      const prefix = cluster();
      const a = candidate(prefix, 'a:1');
      const leads = once(a, 'leader');
      await a.start();
      await leads;
      const store = new EtcdStore(etcd.client, prefix, etcd.endpoint, () => ({ key: a.key, epoch: a.epoch }));
      await Promise.all(
        Array.from({ length: 300 }, (_, i) => store.write([{ key: `k/${String(i).padStart(3, '0')}`, value: i }])),
      );
      await store.write([{ key: 'k/000', delete: true }]);
      const all = await store.load();
      expect(all).toHaveLength(299);
      expect(all[0]).toEqual(['k/001', 1]);
      const big = Array.from({ length: 129 }, (_, i) => ({ key: `b/${i}`, value: i }));
      await expect(store.write(big)).rejects.toThrow(/a batch of 129 ops, \d+ bytes, is over etcd's 128 ops and/);
      const huge = [
        { key: 'h/small', value: 1 },
        { key: 'h/huge', value: 'x'.repeat(1.6 * 1024 * 1024) },
      ];
      await expect(store.write(huge)).rejects.toThrow(
        /a batch of 2 ops, \d+ bytes, is over etcd's 128 ops and \d+ bytes/,
      );
      expect((await store.load()).filter(([k]) => !k.startsWith('k/'))).toEqual([]);
      await store.close();
    },
  );
});
