/**
 * Chaos on a cluster (issue 20, SPEC S7, R4, P8, S1-S4): the chaos run of chaos.ts against three `--store etcd://…
 * --cluster` members on a real etcd instead of one server — the leader SIGKILLed (a standby takes over once its
 * lease runs out) and SIGTERMed (it resigns: a hand-over), each time started again as a standby — with real agents
 * given every member (`--server a,b,c`) and clients following the leader hint. The books invariant is checked on
 * every member at its takeover and after every event; at the end the books are full, nothing is held, waits or
 * runs, no process is left, no call id ran twice, and held claims resumed with the same machine and GPU ids.
 * Skipped only outside CI when no etcd binary is installed; the longer run is `make chaos ETCD=1`.
 */
import { expect, it } from 'vitest';
import { etcdSuite } from '../support/cluster.js';
import { formatReport, runChaos } from './chaos.js';

const { describeEtcd, etcd } = etcdSuite('chaos-cluster.test.ts');

describeEtcd('chaos on a cluster (SPEC S7)', () => {
  it('seed 11, 14 s, three members: leader SIGKILL and SIGTERM with the work in flight leave no leak, no double ' +
    'grant, no process, no call run twice; every takeover raises the epoch', async () => {
    const r = await runChaos({ seed: 11, durationMs: 14_000, concurrency: 4, etcd: etcd().endpoint, members: 3 });
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
    // It did what it says: the leader was killed both ways, a standby took over each time with a higher epoch.
    const c = r.cluster!;
    expect(c.takeoverMs.length).toBeGreaterThanOrEqual(1);
    expect(c.handoverMs.length).toBeGreaterThanOrEqual(1);
    expect(c.epochs).toEqual([...c.epochs].sort((a, b) => a - b));
    expect(new Set(c.epochs).size).toBe(c.epochs.length);
    expect(c.follows.hinted + c.follows.rotated).toBeGreaterThanOrEqual(2);
    expect(r.executions).toBeGreaterThanOrEqual(10);
    expect(r.kills.clients).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
