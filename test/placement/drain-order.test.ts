import { describe, expect, it } from 'vitest';
import type { MachineSpec } from '../../src/placement/types.js';
import { prng, Refereed } from '../support/placement-rules.js';

const engine: MachineSpec = { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false };
const ask = (cpus: number, gpus: number) => ({ cpus, gpus, label: '', policy: 'prefer' as const, runId: 'sweep' });
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Releases the oldest held claim until nothing is held or waiting. The books invariant and the
 * grant rules are checked after every event (Refereed); the whole waiting list after the first
 * 50 releases, then after every 20th, and at the end.
 */
async function drain(r: Refereed): Promise<void> {
  for (let step = 0; r.held().length > 0; step++) {
    r.placer.release(r.held()[0]);
    await flush();
    if (step < 50 || step % 20 === 0) r.checkSettled(`release ${step}`);
    if (r.violations.length) return;
  }
  r.checkSettled('drained');
}

describe('a thousand waiters drain in arrival order (SPEC P6, P7; issue 9)', () => {
  it(
    '1,000 asks of mixed sizes (1–16 cores, 1–2 GPUs) queued behind a full 64-core, ' +
      '8-GPU machine are granted in arrival order',
    async () => {
      const r = new Refereed(engine);
      const rnd = prng(9);
      r.placer.attach({
        name: 'big',
        labels: [],
        inventory: { cpus: 64, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] },
        remote: true,
      });
      r.claim(ask(64, 8), new AbortController().signal);
      await flush();
      const nodes: string[] = [];
      for (let i = 0; i < 1000; i++) {
        // Every ask needs both cores and GPUs, so what older waiters hold back always bars a younger one.
        nodes.push(
          r.claim(
            ask([1, 2, 4, 8, 16][Math.floor(rnd() * 5)], 1 + Math.floor(rnd() * 2)),
            new AbortController().signal,
          ),
        );
      }
      await flush();
      r.checkSettled('queued');
      expect(r.placer.snapshot().waiting).toHaveLength(1000);
      await drain(r);
      expect(r.violations).toEqual([]);
      // c1 is the full-machine holder; the waiters are c2..c1001 in the order they asked.
      expect(r.grantOrder).toEqual(Array.from({ length: 1001 }, (_, i) => `c${i + 1}`));
      expect(nodes.every((n) => r.outcome(n).grant !== undefined)).toBe(true);
      expect(r.placer.snapshot().machines.find((m) => m.name === 'big')?.free).toEqual({
        cpus: 64,
        gpus: 8,
        ramMb: undefined,
      });
    },
  );

  it(
    '1,000 waiters of two asks over 20 machines: each ask is served in arrival order, ' +
      'and none waits while a machine could hold it',
    async () => {
      const r = new Refereed(engine);
      for (let i = 0; i < 20; i++) {
        r.placer.attach({
          name: `w${i}`,
          labels: [],
          inventory: { cpus: 8, gpuIds: i % 2 ? [0, 1] : [] },
          remote: true,
        });
        r.claim(ask(8, i % 2 ? 2 : 0), new AbortController().signal);
      }
      await flush();
      const kinds = new Map<string, string>();
      for (let i = 0; i < 1000; i++) {
        const node = r.claim(i % 3 ? ask(4, 0) : ask(2, 1), new AbortController().signal);
        kinds.set(node, i % 3 ? 'cpu' : 'gpu');
      }
      await flush();
      r.checkSettled('queued');
      await drain(r);
      expect(r.violations).toEqual([]);
      const idOf = (n: string) => Number(r.outcome(n).grant!.claimId.slice(1));
      for (const kind of ['cpu', 'gpu']) {
        const ids = [...kinds].filter(([, k]) => k === kind).map(([n]) => idOf(n));
        const granted = r.grantOrder.map((id) => Number(id.slice(1))).filter((id) => ids.includes(id));
        expect(granted, `${kind} asks in arrival order`).toEqual([...ids].sort((a, b) => a - b));
      }
    },
  );
});
