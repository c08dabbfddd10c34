/**
 * Survival target (b), the second half: ms from spawning `berth serve` to serving with `claims` claims in its
 * journal (written straight into the lmdb store, as bench/journal.bench.ts does), and the restore's own ms
 * from its log line.
 */
import { LmdbStore } from '../../src/journal/lmdb-store.js';
import { serve, freeAddress, kill, tempDir } from './harness.js';

/**
 * Start to serving, ms, with `claims` journaled claims of 1 cpu each on the engine host; the restore's own ms (its
 * log line); and start to serving with an empty journal just before, for the machine's load at the time.
 */
export async function restoreTime(
  claims: number,
): Promise<{ readyMs: number; restoreMs: number; emptyReadyMs: number }> {
  const empty = await serve(await freeAddress(), tempDir('empty'));
  await kill(empty.child);
  const dir = tempDir('restore');
  const store = LmdbStore.open(dir);
  for (let i = 0; i < claims; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, claims - i) }, (_, k) => ({
      key: `claim/c-bench-${i + k}`,
      value: {
        claimId: `c-bench-${i + k}`,
        machine: 'engine',
        remote: false,
        allocation: { cpus: 1, gpuIds: [], env: { OMP_NUM_THREADS: '1', CUDA_VISIBLE_DEVICES: '' } },
        clamped: false,
        fellBack: false,
        ask: { cpus: 1, gpus: 0, label: '', policy: 'prefer', node: 'bench.node', runId: 'bench', env: {} },
        tokenHash: '',
        holdMs: 0,
        at: Date.now(),
      },
    }));
    await store.write(batch);
  }
  await store.close();
  const s = await serve(await freeAddress(), dir, ['--cpus', String(Math.max(claims, 1))]);
  await kill(s.child);
  const line = s
    .log()
    .split('\n')
    .find((l) => l.includes('restored from the journal'));
  const restoreMs = line ? Number(JSON.parse(line).ms) : Number.NaN;
  return { readyMs: Math.round(s.ms), restoreMs, emptyReadyMs: Math.round(empty.ms) };
}
