/**
 * Group commit on etcd (issue 20, SPEC S4, S7): etcd refuses a transaction of more than 128 operations or 1.5 MiB
 * (its defaults), so the journal cuts its batches to fit, keeps a few disjoint ones in flight and acknowledges them
 * in order. Through real `berth serve --store etcd://…` processes and a real etcd: 240 claims asked at once are all
 * granted and all resumed on the standby after the leader's SIGKILL (a longer lease: the machine is shared). On the
 * journal itself over a real etcd: a turn's 300 claims go in transactions of at most 128 records, a key's changes
 * land in order across batches, a record over the request size fails that change alone, and a journal larger than
 * one gRPC message is read back whole.
 */
import { expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { EtcdStore, LOAD_PAGE, MAX_TXN_OPS } from '../../src/journal/etcd-store.js';
import { etcdClient } from '../../src/ha/etcd-client.js';
import type { ClaimRecord } from '../../src/journal/records.js';
import { claim, resumeClaim, type ClaimHandle } from '../support/claims.js';
import { etcdSuite, serving } from '../support/cluster.js';

const { describeEtcd, cleanup, pair, etcd, clusterName } = etcdSuite('etcd-group-commit.test.ts');

const CLAIMS = 240;

const claimRecord = (id: string, env: Record<string, string> = {}): ClaimRecord => ({
  claimId: id,
  machine: 'engine',
  remote: false,
  allocation: { cpus: 1, gpuIds: [], env },
  clamped: false,
  fellBack: false,
  ask: { cpus: 1, gpus: 0, label: '', policy: 'prefer', node: 'n', runId: 'r', env },
  tokenHash: '',
  holdMs: 0,
  at: Date.now(),
});

/**
 * A journal on a real EtcdStore fenced on a key of its own (its create revision is the epoch), on a client as
 * `berth serve` makes it (etcdClient).
 */
async function etcdJournal(commits: number[]): Promise<{ journal: Journal; store: EtcdStore; prefix: string }> {
  const prefix = `/berth/${clusterName()}`;
  const fenceKey = `${prefix}/fence`;
  const client = etcdClient({ hosts: [`http://${etcd().endpoint}`] });
  cleanup.push(() => client.close());
  await client.put(fenceKey).value('me');
  const epoch = Number((await client.get(fenceKey).exec()).kvs[0].create_revision);
  const store = new EtcdStore(client, prefix, etcd().endpoint, () => ({ key: fenceKey, epoch }));
  const { journal } = await Journal.open(store, { onCommit: (_ms, n) => commits.push(n) });
  cleanup.push(() => journal.close());
  return { journal, store, prefix };
}

describeEtcd('group commit on etcd (SPEC S4, S7)', () => {
  it(`${CLAIMS} claims asked at once through berth serve are all granted, and all resumed with the same allocation ` +
    "on the standby after the leader's SIGKILL", async () => {
    const flags = [
      '--leader-ttl',
      '8',
      '--cpus',
      String(CLAIMS + 16),
      '--gpus',
      '',
      '--claim-hold',
      '120',
      '--restart-hold',
      '120',
    ];
    const { a, b } = await pair(flags);
    const handles: ClaimHandle[] = Array.from({ length: CLAIMS }, (_, i) =>
      claim(a.client, { cpus: 1, holdMs: 120_000, node: `n${i}`, env: { N: String(i) } }),
    );
    const grants = await Promise.all(handles.map((h) => h.granted));
    expect(new Set(grants.map((g) => g.claimId)).size).toBe(CLAIMS);
    expect(a.log()).not.toContain('journal write failed');

    await a.kill();
    await serving(b);
    expect(b.log()).toMatch(new RegExp(`"claims":${CLAIMS},"dropped":0`));
    const back = grants.map((g) => resumeClaim(b.client, g.claimId, g.resumeToken));
    const resumed = await Promise.all(back.map((h) => h.granted));
    expect(resumed).toEqual(
      grants.map((g) => expect.objectContaining({ claimId: g.claimId, allocation: g.allocation, resumed: true })),
    );
    await Promise.all(back.map((h) => h.release()));
  }, 120_000);

  it(
    'the journal on etcd: 300 claims of one turn go in transactions of at most 128 records, all durable; a key ' +
      'changed again in a later batch ends as last changed',
    async () => {
      const commits: number[] = [];
      const { journal, store } = await etcdJournal(commits);
      for (let i = 0; i < 300; i++) journal.claimHeld(claimRecord(`c-${i}`));
      // Released in the same turn, but after their grants were cut into earlier batches: a later, overlapping batch.
      for (let i = 0; i < 40; i++) {
        journal.claimGone(`c-${i}`, {
          claimId: `c-${i}`,
          runId: 'r',
          machine: 'engine',
          outcome: 'released',
          endedAt: i,
        });
      }
      await journal.flushed();
      expect(commits.length).toBeGreaterThanOrEqual(3);
      expect(Math.max(...commits)).toBeLessThanOrEqual(MAX_TXN_OPS);
      expect(commits.reduce((n, c) => n + c, 0)).toBe(300 + 80);
      const keys = (await store.load()).map(([k]) => k);
      expect(keys.filter((k) => k.startsWith('claim/')).length).toBe(260);
      expect(keys).not.toContain('claim/c-0');
      expect(keys.filter((k) => k.startsWith('released/')).length).toBe(40);
    },
  );

  it(
    "a claim record over etcd's request size fails that claim alone, naming it and the limit; the claims of the " +
      'same turn are durable',
    async () => {
      const commits: number[] = [];
      const { journal, store } = await etcdJournal(commits);
      for (let i = 0; i < 10; i++) journal.claimHeld(claimRecord(`ok-${i}`));
      journal.claimHeld(claimRecord('huge', { BIG: 'x'.repeat(1600 * 1024) }));
      for (let i = 10; i < 20; i++) journal.claimHeld(claimRecord(`ok-${i}`));
      await expect(journal.flushed('huge')).rejects.toMatchObject({
        tooLarge: true,
        message: expect.stringMatching(/record claim\/huge is \d+ bytes, over the store's limit of \d+ bytes/),
      });
      await journal.flushed('ok-3');
      const keys = (await store.load()).map(([k]) => k);
      expect(keys.length).toBe(20);
      expect(keys).not.toContain('claim/huge');
      journal.claimGone('huge');
      await journal.flushed('huge'); // gone: nothing refused any more
    },
  );

  it(`a journal over gRPC's default 4 MiB message is read back whole and in key order, in pages of ${LOAD_PAGE} ` +
    'records (8,000 claims, and three records of 1.2 MiB in one page)', async () => {
    const { journal, store } = await etcdJournal([]);
    const env = { PAD: 'p'.repeat(400) };
    for (let i = 0; i < 8000; i++) journal.claimHeld(claimRecord(`c-${String(i).padStart(5, '0')}`, env));
    for (const id of ['big-1', 'big-2', 'big-3']) journal.claimHeld(claimRecord(id, { BIG: 'x'.repeat(600 * 1024) }));
    await journal.flushed('big-3'); // rejects if a record was refused
    const all = await store.load();
    const keys = all.map(([k]) => k);
    expect(keys.length).toBe(8003);
    expect(keys).toEqual([...keys].sort());
    expect(keys.slice(0, 3)).toEqual(['claim/big-1', 'claim/big-2', 'claim/big-3']);
    expect((all[1][1] as ClaimRecord).allocation.env.BIG.length).toBe(600 * 1024);
    expect(keys.at(-1)).toBe('claim/c-07999');
  }, 60_000);
});
