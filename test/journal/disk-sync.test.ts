/**
 * The journal's commit without fsync and its batched fsync (docs/journal.md "Power loss"): a commit
 * acknowledged survives a SIGKILL of the process before any fsync ran; fsyncs are batched (one at a
 * time, at most one per period); a failed fsync stops every later acknowledgement.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DiskSync } from '../../src/journal/disk-sync.js';
import { LmdbStore } from '../../src/journal/lmdb-store.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'berth-disk-sync-'));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A child that commits one record with a one-hour sync period, then SIGKILLs itself once acknowledged. */
const KILLED_AFTER_ACK = `
import { LmdbStore } from ${JSON.stringify(join(process.cwd(), 'src/journal/lmdb-store.ts'))};
const store = LmdbStore.open(process.argv[1], 3_600_000);
await store.write([{ key: 'claim/c-1', value: { gpuIds: [3] } }]);
process.kill(process.pid, 'SIGKILL');
`;

describe('the journal commits without fsync and syncs in batches', () => {
  it('an acknowledged commit survives a SIGKILL of the process before any fsync', async () => {
    const d = dir();
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', KILLED_AFTER_ACK, d], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const signal = await new Promise((r) => child.once('exit', (_code, sig) => r(sig)));
    expect(signal, err).toBe('SIGKILL');
    const store = LmdbStore.open(d);
    cleanup.push(() => store.close());
    expect(await store.load()).toEqual([['claim/c-1', { gpuIds: [3] }]]);
  });

  it('writes are synced within the period, many writes share one fsync, and close syncs the rest', async () => {
    const d = dir();
    const store = LmdbStore.open(d, 50);
    for (let i = 0; i < 100; i++) await store.write([{ key: `k/${i}`, value: i }]);
    await store.disk.synced(); // resolves once an fsync covering all 100 commits ran
    await store.write([{ key: 'k/last', value: 1 }]);
    await store.close(); // syncs the last commit before closing
    const again = LmdbStore.open(d);
    expect((await again.load()).length).toBe(101);
    await again.close();
  });

  it('fsyncs run one at a time, at most one per period, and a failed one is kept', async () => {
    let syncs = 0;
    let fail = false;
    const pending: Array<() => void> = [];
    let called = (): void => {};
    const nextCall = () => new Promise<void>((r) => (called = r));
    const disk = new DiskSync((done) => {
      syncs++;
      pending.push(() => done(fail ? new Error('EIO') : null));
      called();
    }, 20);
    const firstCall = nextCall();
    for (let i = 0; i < 50; i++) disk.wrote();
    const first = disk.synced();
    await firstCall; // the first sync starts at once (none ran before), one for all 50 writes
    disk.wrote(); // while it runs: covered by the next one
    const second = disk.synced();
    expect(syncs).toBe(1);
    const secondCall = nextCall();
    pending.shift()!();
    await first;
    fail = true;
    await secondCall; // the next sync starts once the first is done and the period has passed
    expect(syncs).toBe(2);
    pending.shift()!();
    await expect(second).rejects.toThrow('EIO');
    expect(disk.failure?.message).toBe('EIO');
  });
});
