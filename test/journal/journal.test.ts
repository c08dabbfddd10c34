/**
 * The journal on the embedded store (issue 19 item 4): group commit, what a restart reads back,
 * ended calls kept for the retention, and a record of the wrong shape refused naming its key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { LmdbStore } from '../../src/journal/lmdb-store.js';
import type { ClaimRecord } from '../../src/journal/records.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'berth-journal-'));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const claimRecord = (id: string, gpuIds: number[]): ClaimRecord => ({
  claimId: id,
  machine: 'engine',
  remote: false,
  allocation: { cpus: 1, gpuIds, env: { CUDA_VISIBLE_DEVICES: gpuIds.join(',') } },
  clamped: false,
  fellBack: false,
  ask: { cpus: 1, gpus: gpuIds.length, label: '', policy: 'prefer', node: 'n', runId: 'r', env: {} },
  tokenHash: '',
  holdMs: 0,
  at: Date.now(),
});

describe('the journal on lmdb', () => {
  it('changes made in one turn share one commit, and a reopened journal reads back exactly what was durable', async () => {
    const d = dir();
    const commits: number[] = [];
    const { journal } = await Journal.open(LmdbStore.open(d), { onCommit: (_ms, n) => commits.push(n) });
    for (let i = 0; i < 100; i++) journal.claimHeld(claimRecord(`c-${i}`, [i % 8]));
    journal.claimGone('c-7'); // granted and released before the commit: the last change wins
    journal.workerKnown({
      name: 'gpu-a',
      labels: ['gpu'],
      inventory: { cpus: 8, gpuIds: [0, 1] },
      maxParallel: 0,
      version: '1',
      agentId: 'h:/s',
      at: 1,
    });
    await journal.flushed();
    expect(commits).toEqual([101]);
    await journal.close();

    const again = await Journal.open(LmdbStore.open(d));
    cleanup.push(() => again.journal.close());
    expect(again.state.claims.map((c) => c.claimId).sort()).toEqual(
      Array.from({ length: 100 }, (_, i) => `c-${i}`)
        .filter((id) => id !== 'c-7')
        .sort(),
    );
    expect(again.state.claims.find((c) => c.claimId === 'c-9')?.allocation.gpuIds).toEqual([1]);
    expect(again.state.workers.map((w) => [w.name, w.inventory.gpuIds])).toEqual([['gpu-a', [0, 1]]]);
  });

  it('a batch queued while another is being written goes in the next commit, and flushed() waits for it', async () => {
    const d = dir();
    const commits: number[] = [];
    const { journal } = await Journal.open(LmdbStore.open(d), { onCommit: (_ms, n) => commits.push(n) });
    cleanup.push(() => journal.close());
    journal.claimHeld(claimRecord('first', [0]));
    await new Promise((r) => setImmediate(r)); // the first batch is being written now
    journal.claimHeld(claimRecord('second', [1]));
    journal.claimHeld(claimRecord('third', [2]));
    await journal.flushed();
    expect(commits).toEqual([1, 2]);
  });

  it('ended calls are kept for the retention period and dropped after it', async () => {
    const d = dir();
    const { journal } = await Journal.open(LmdbStore.open(d));
    journal.callStarted({ callId: 'r:f.a', claimId: 'c', machine: 'engine', runId: 'r', at: 1 });
    journal.callEnded({ callId: 'r:f.old', runId: 'r', machine: 'engine', outcome: 'result', endedAt: 1 });
    journal.callEnded({ callId: 'r:f.new', runId: 'r', machine: 'engine', outcome: 'failure', endedAt: Date.now() });
    await journal.close();
    const { journal: j2, state } = await Journal.open(LmdbStore.open(d), { retentionMs: 60_000 });
    expect(state.calls.map((c) => c.callId)).toEqual(['r:f.a']);
    expect(state.ended.map((e) => [e.callId, e.outcome])).toEqual([['r:f.new', 'failure']]);
    await j2.close(); // the old one's delete is written on close
    const { journal: j3, state: s3 } = await Journal.open(LmdbStore.open(d), { retentionMs: Infinity });
    cleanup.push(() => j3.close());
    expect(s3.ended.map((e) => e.callId)).toEqual(['r:f.new']);
  });

  it('ended calls and claims (the history) are capped at maxHistory, the oldest dropped first', async () => {
    const d = dir();
    const { journal } = await Journal.open(LmdbStore.open(d), { maxHistory: 3 });
    const now = Date.now();
    for (let i = 0; i < 3; i++)
      journal.callEnded({ callId: `r:f.n${i}`, runId: 'r', machine: 'engine', outcome: 'result', endedAt: now + i });
    journal.claimEnded({ claimId: 'c-9', runId: 'r', machine: 'engine', outcome: 'released', endedAt: now + 9 });
    await journal.close();
    const { journal: j2, state } = await Journal.open(LmdbStore.open(d), { maxHistory: 3 });
    cleanup.push(() => j2.close());
    expect(state.ended.map((e) => e.callId)).toEqual(['r:f.n1', 'r:f.n2']);
    expect(state.released.map((r) => [r.claimId, r.outcome])).toEqual([['c-9', 'released']]);
  });

  it('a record of the wrong shape is refused naming the journal and the key', async () => {
    const d = dir();
    const store = LmdbStore.open(d);
    await store.write([{ key: 'claim/c-1', value: { claimId: 'c-1', machine: 'engine' } }]);
    await expect(Journal.open(store)).rejects.toThrow(`journal ${join(d, 'journal')}: record claim/c-1: remote: `);
    await store.close();
  });
});
