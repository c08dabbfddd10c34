/**
 * Preemption damping (SPEC Q2, issue 22 item 2) through the placer: the same work — one run's node, claimed again
 * after each preemption as a Run retried would — is preempted at most `--preemption-limit` times per window; the next
 * preemptor waits and says why, and the work is a victim again once the oldest preemption has left the window.
 */
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events.js';
import { Damping } from '../../src/placement/damping.js';
import { Placer } from '../../src/placement/placer.js';
import type { Held } from '../../src/placement/state.js';
import type { QueuedInfo } from '../../src/placement/types.js';
import { placerAsk } from '../support/asks.js';

const ask = placerAsk;

describe('preemption damping', () => {
  it('preempts the same work at most the limit per window; the next preemptor waits and says why', async () => {
    const events = new EventBus();
    let n = 0;
    const p = new Placer({
      engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: 1, gpuIds: [] } },
      events,
      newClaimId: () => `c${++n}`,
      priorityClasses: { urgent: { value: 10 } },
      preemptionLimit: 2,
    });
    const told: string[] = [];
    events.subscribe((e) => {
      if (e.kind === 'claim_preempted') told.push(e.claimId!);
    });
    const signal = new AbortController().signal;
    const sweep = ask({ runId: 'sweep', node: 'trial' }); // the same work each time
    for (let i = 0; i < 2; i++) {
      const victim = await p.claim(sweep, { signal });
      const urgent = p.claim(ask({ priorityClass: 'urgent', node: `u${i}` }), { signal });
      expect(told.at(-1)).toBe(victim.claimId);
      p.release(victim.claimId); // its holder gives it back in the grace
      p.release((await urgent).claimId);
    }
    const victim = await p.claim(sweep, { signal });
    let queued: QueuedInfo | undefined;
    const third = p.claim(ask({ priorityClass: 'urgent', node: 'u2' }), { signal, onQueued: (q) => (queued = q) });
    expect(told).toHaveLength(2);
    expect(queued?.detail).toContain(
      'preempting nothing yet: 1 lower-priority claim(s) already preempted 2 times in 600 s',
    );
    // other work is a victim as before
    p.release(victim.claimId);
    await third;
    p.checkInvariants();
  });

  it('a claim naming neither run nor node that makes room and waits again is still one work: preempted at most the limit', async () => {
    const events = new EventBus();
    let n = 0;
    const p = new Placer({
      engine: { name: 'engine', labels: [], remote: false, inventory: { cpus: 1, gpuIds: [] } },
      events,
      newClaimId: () => `c${++n}`,
      priorityClasses: { urgent: { value: 10 } },
      preemptionLimit: 2,
    });
    let told = 0;
    events.subscribe((e) => {
      if (e.kind === 'claim_preempted') told++;
    });
    const signal = new AbortController().signal;
    let held = await p.claim(ask({ runId: '', node: '' }), { signal });
    for (let i = 0; i < 2; i++) {
      const again = p.requeueOnPreempt(held.claimId, { signal: () => signal });
      const urgent = p.claim(ask({ priorityClass: 'urgent', node: `u${i}` }), { signal });
      p.makeRoom(held.claimId); // it waits again at its place, under a new id
      p.release((await urgent).claimId);
      held = await again.granted;
      expect(held.ask.requeuedFrom).toBe('c1');
    }
    let queued: QueuedInfo | undefined;
    const third = p.claim(ask({ priorityClass: 'urgent', node: 'u2' }), { signal, onQueued: (q) => (queued = q) });
    expect(told).toBe(2);
    expect(queued?.detail).toContain('already preempted 2 times in 600 s');
    p.release(held.claimId);
    await third;
    p.checkInvariants();
  });

  it('lets the work be a victim again once the oldest preemption left the window', () => {
    const d = new Damping(2, 1000);
    const h = { grant: { ask: ask({ runId: 'sweep', node: 'trial', owner: 'alice' }) } } as unknown as Held;
    const other = { grant: { ask: ask({ runId: 'sweep', node: 'trial', owner: 'bob' }) } } as unknown as Held;
    d.record(h, 0);
    d.record(h, 400);
    expect(d.exhausted(h, 900)).toBe(true);
    expect(d.exhausted(other, 900)).toBe(false); // another tenant's work of the same name
    expect(d.exhausted(h, 1000)).toBe(false); // the preemption at 0 left the window
    const anon = (claimId: string) => ({ grant: { claimId, ask: ask({ runId: '', node: '' }) } }) as unknown as Held;
    d.record(anon('c1'), 0);
    d.record(anon('c2'), 0);
    expect(d.exhausted(anon('c1'), 0)).toBe(false); // no run, no node: each claim is its own work
    d.record(anon('c1'), 0);
    expect(d.exhausted(anon('c1'), 0)).toBe(true);
  });
});
