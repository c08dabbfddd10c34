/**
 * Chaos in the suite (issue 10, SPEC R4, R5, P8): ~20 s of seeded operations against a real
 * server with real `berth worker` agents and client processes SIGKILLed, claims released with runs
 * in flight, Cancels, callers going away and one server restart. The books invariant is checked
 * after every event; at the end the books are full, nothing waits or runs, no process is left.
 * The longer run with a chosen seed and duration is `make chaos` (bin/chaos.js).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runChaos } from './chaos.js';

describe('chaos', () => {
  it('seed 7, 20 s: kills, cancels, releases with runs in flight and a restart leave no leak, no double grant, ' +
    'no process', async () => {
    const r = await runChaos({ seed: 7, durationMs: 20_000, concurrency: 5 });
    console.log(formatReport(r));
    expect(r.leftover.invariantErrors).toEqual([]);
    expect(r.unexpected).toEqual([]);
    expect(r.leftover).toEqual({ invariantErrors: [], held: 0, waiting: 0, calls: 0, notFull: [], processes: [] });
    expect(r.stuck).toBe(0);
    expect(r.runsOutlivingRelease).toBe(0);
    expect(r.leaks).toBe(0);
    // It did what it says: the chaos happened.
    expect(r.serverRestarts).toBe(1);
    expect(r.kills.workers).toBeGreaterThanOrEqual(1);
    expect(r.kills.clients).toBeGreaterThanOrEqual(1);
    expect(r.releasesWithRunsInFlight).toBeGreaterThanOrEqual(1);
    expect(r.cancels).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
