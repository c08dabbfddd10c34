import { describe, expect, it } from 'vitest';
import type { Shape, Unmet } from '../../src/placement/provisioner.js';
import { pack } from '../../src/provision/pack.js';

const want = (claimId: string, cpus: number, gpus = 0, label = '', policy: 'prefer' | 'require' = 'prefer'): Unmet => ({
  claimId,
  amount: { cpus, gpus },
  ask: { cpus, gpus, label, policy, node: claimId, runId: '', env: {} },
});
const cpu4: Shape = { cpus: 4, gpus: 0, labels: [] };
const gpu2: Shape = { cpus: 8, gpus: 2, labels: ['gpu'] };

describe('packing demand into shapes (SPEC V2)', () => {
  it('ten 1-cpu claims fill 4-cpu machines: three machines, not ten', () => {
    const p = pack(
      Array.from({ length: 10 }, (_, i) => want(`c${i}`, 1)),
      [],
      [cpu4],
      10,
    );
    expect(p.planned).toEqual([cpu4, cpu4, cpu4]);
    expect(p.assigned.size).toBe(10);
  });

  it('a machine already starting is supply: demand it can hold starts nothing new', () => {
    const p = pack([want('a', 2), want('b', 2)], [cpu4], [cpu4], 10);
    expect(p.planned).toEqual([]);
    expect([...p.assigned.values()]).toEqual([0, 0]);
  });

  it('max_machines caps what is started; the rest stays unassigned', () => {
    const p = pack([want('a', 4), want('b', 4), want('c', 4)], [], [cpu4], 2);
    expect(p.planned).toHaveLength(2);
    expect(p.assigned.has('c')).toBe(false);
  });

  it('fewest machines: a GPU claim, a CPU claim and a gpu-labelled claim share one GPU machine', () => {
    const p = pack(
      [want('g', 1, 1), want('c', 2), want('needs-gpu-label', 1, 0, 'gpu', 'require')],
      [],
      [cpu4, gpu2],
      10,
    );
    expect(p.planned).toEqual([gpu2]);
    expect([...p.assigned.values()]).toEqual([0, 0, 0]);
  });

  it('CPU claims alone get the smaller CPU shape; a required label only a GPU shape carries gets that one', () => {
    expect(pack([want('c', 2)], [], [gpu2, cpu4], 10).planned).toEqual([cpu4]);
    expect(pack([want('l', 1, 0, 'gpu', 'require')], [], [cpu4, gpu2], 10).planned).toEqual([gpu2]);
  });

  it('a claim no shape holds is left for clamping, not provisioned', () => {
    expect(pack([want('huge', 64)], [], [cpu4, gpu2], 10)).toEqual({ assigned: new Map(), planned: [] });
  });
});
