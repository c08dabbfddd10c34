/**
 * Chaos in the suite (issues 10 and 19, SPEC R4, R5, P8, S1-S4): ~20 s of seeded operations against a
 * real server process with its journal and real `berth worker` agents: agents and client processes
 * SIGKILLed, claims released with runs in flight, Cancels, callers going away, the server SIGKILLed and
 * started again, links of workers and of a client cut (claims resumed by token, Runs followed again by
 * call id). The books invariant is checked at every start and after every event; at the end the books
 * are full, nothing waits or runs, no process is left, and no call id ran twice.
 * The longer run with a chosen seed and duration is `make chaos` (bin/chaos.js).
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runChaos } from './chaos.js';

describe('chaos', () => {
  it('seed 7, 20 s: kills, cancels, releases with runs in flight, a server SIGKILL and link cuts leave no leak, ' +
    'no double grant, no process, no call run twice', async () => {
    const r = await runChaos({ seed: 7, durationMs: 20_000, concurrency: 5 });
    console.log(formatReport(r));
    expect(r.leftover.invariantErrors).toEqual([]);
    expect(r.unexpected).toEqual([]);
    expect(r.leftover).toEqual({ invariantErrors: [], held: 0, waiting: 0, calls: 0, notFull: [], processes: [] });
    expect(r.stuck).toBe(0);
    expect(r.runsOutlivingRelease).toBe(0);
    expect(r.ranTwice).toEqual([]);
    expect(r.resumeMismatches).toEqual([]);
    expect(r.lineProblems.join('\n')).toBe('');
    expect(r.leaks).toBe(0);
    // It did what it says: the chaos happened.
    expect(r.serverRestarts).toBe(1);
    expect(r.serverSigkills).toBe(1);
    expect(r.linkCuts.workers).toBeGreaterThanOrEqual(2);
    expect(r.linkCuts.clients).toBeGreaterThanOrEqual(2);
    expect(r.executions).toBeGreaterThanOrEqual(20);
    expect(r.kills.workers).toBeGreaterThanOrEqual(1);
    expect(r.kills.clients).toBeGreaterThanOrEqual(1);
    expect(r.releasesWithRunsInFlight).toBeGreaterThanOrEqual(1);
    expect(r.cancels).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
