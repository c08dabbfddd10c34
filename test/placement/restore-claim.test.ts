/**
 * Placer.restoreClaim and restoreMachine (SPEC S4, S6): a journaled claim takes exactly its resources or
 * is refused with the books unchanged; a restored machine is never chosen, but an ask it could hold waits
 * for it, and it keeps its claims (same GPU ids) when its worker comes back.
 */
import { describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { EventBus } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { NormalizedAsk } from '../../src/placement/types.js';

const ask = (a: Partial<NormalizedAsk> = {}): NormalizedAsk => ({
  cpus: 1,
  gpus: 0,
  label: '',
  policy: 'prefer',
  node: 'n',
  runId: 'r',
  env: {},
  ...a,
});

function placer(): Placer {
  return new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 4, gpuIds: [0, 1, 2, 3] }, remote: false },
    events: new EventBus(),
  });
}

describe('restoring the books', () => {
  it('a restored claim holds exactly its GPU ids; one asking for ids held already is refused, books unchanged', () => {
    const p = placer();
    const g = p.restoreClaim({
      claimId: 'c-a',
      machine: 'engine',
      allocation: { cpus: 1, gpuIds: [2, 1], env: { CUDA_VISIBLE_DEVICES: '1,2' } },
      ask: ask({ gpus: 2 }),
    });
    expect(g.allocation.gpuIds).toEqual([1, 2]);
    expect(g.allocation.env.CUDA_VISIBLE_DEVICES).toBe('1,2');
    const twice = () =>
      p.restoreClaim({ claimId: 'c-b', machine: 'engine', allocation: { cpus: 1, gpuIds: [2], env: {} }, ask: ask() });
    expect(twice).toThrow(BerthError);
    expect(twice).toThrow('claim c-b cannot be restored on engine: claim c-b: gpu 2 not free');
    expect(() =>
      p.restoreClaim({ claimId: 'c-c', machine: 'gone', allocation: { cpus: 1, gpuIds: [], env: {} }, ask: ask() }),
    ).toThrow('claim c-c cannot be restored: no machine gone');
    const engine = p.snapshot().machines[0];
    expect([engine.free.cpus, engine.freeGpuIds]).toEqual([3, [0, 3]]);
    p.checkInvariants();
    // A new grant takes what is free, never the restored ids.
    const next = p.claimOrWait(ask({ gpus: 2 }), { signal: new AbortController().signal });
    expect((next as { allocation: { gpuIds: number[] } }).allocation.gpuIds).toEqual([0, 3]);
  });

  it('a restored GPU machine is never chosen, a GPU ask waits for it unclamped, and it comes back with its claims', async () => {
    const p = new Placer({
      engine: { name: 'engine', labels: [], inventory: { cpus: 4, gpuIds: [] }, remote: false },
      events: new EventBus(),
    });
    const spec = { name: 'gpu-a', labels: ['gpu'], inventory: { cpus: 8, gpuIds: [0, 1] }, remote: true };
    p.restoreMachine(spec, Date.now() + 60_000);
    p.restoreClaim({ claimId: 'c-old', machine: 'gpu-a', allocation: { cpus: 1, gpuIds: [1], env: {} }, ask: ask() });
    let detail = '';
    const waiting = p.claim(ask({ gpus: 1 }), {
      signal: new AbortController().signal,
      onQueued: (q) => (detail = q.detail),
    });
    expect(detail).toContain('waiting for gpu-a to come back (restart hold');
    expect(p.verdict(ask({ gpus: 1 })).verdict).toBe('waits');
    p.attach(spec);
    const g = await waiting;
    expect([g.machine, g.allocation.gpuIds, g.clamped]).toEqual(['gpu-a', [0], false]);
    expect(p.get('c-old')?.allocation.gpuIds).toEqual([1]);
    p.checkInvariants();
  });
});
