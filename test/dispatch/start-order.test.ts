/**
 * Acceptance 9 (SPEC D3): pool [0,1] with A (1 device, 2 s), B (2 devices, 0.2 s), C1–C5
 * (1 device, 0.2 s). Strict FIFO starts them in file order (B waits for A, the Cs wait for B);
 * with --backfill the Cs run on device 1 while A runs, and B still starts as soon as A ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runBerth } from '../support/cli.js';
import { dispatch, readRecord, recordingJob, scratch, withLogDir, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

const CS = ['C1', 'C2', 'C3', 'C4', 'C5'];

function batch(dir: string) {
  return [recordingJob(dir, 'A', 1, 2), recordingJob(dir, 'B', 2, 0.2), ...CS.map((c) => recordingJob(dir, c, 1, 0.2))];
}

describe('jobs start in file order; backfill overtakes a blocked head without starving it', () => {
  it('strict FIFO: A, then B once A ends, then the Cs once B ends', async () => {
    s = scratch();
    const r = await dispatch(s.batch(batch(s.dir)), '--devices', '0,1');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [a, b, ...cs] = ['A', 'B', ...CS].map((l) => readRecord(s.dir, l));
    expect(b.start).toBeGreaterThanOrEqual(a.end);
    expect(b.start - a.end).toBeLessThan(1); // event driven: B starts at once when A ends
    expect(b.devices).toBe('0,1');
    for (const c of cs) expect(c.start).toBeGreaterThanOrEqual(b.end);
    const starts = r.stdout.match(/^START\s+\S+/gm)!.map((l) => l.split(/\s+/)[1]);
    expect(starts).toEqual(['A', 'B', ...CS]);
  });

  it('--backfill: C1–C5 finish on device 1 while A runs; B starts as soon as A ends', async () => {
    s = scratch();
    // --backfill before the file, as people type it: a plain flag, it must not swallow the file name
    const file = s.batch(batch(s.dir));
    const r = await runBerth(['dispatch', '--backfill', file, ...withLogDir(file, ['--devices', '0,1'])]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [a, b, ...cs] = ['A', 'B', ...CS].map((l) => readRecord(s.dir, l));
    for (const c of cs) {
      expect(c.devices).toBe('1');
      expect(c.end).toBeLessThanOrEqual(a.end);
    }
    for (let i = 1; i < cs.length; i++) expect(cs[i].start).toBeGreaterThanOrEqual(cs[i - 1].end); // in file order
    expect(b.start).toBeGreaterThanOrEqual(a.end);
    expect(b.start - a.end).toBeLessThan(1);
  });

  it('--backfill --max-overtakes 2: after two overtakes nothing passes the blocked head any more', async () => {
    s = scratch();
    const r = await dispatch(s.batch(batch(s.dir)), '--devices', '0,1', '--backfill', '--max-overtakes', '2');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [a, b, ...cs] = ['A', 'B', ...CS].map((l) => readRecord(s.dir, l));
    expect(cs[0].end).toBeLessThanOrEqual(a.end);
    expect(cs[1].end).toBeLessThanOrEqual(a.end);
    for (const c of cs.slice(2)) expect(c.start).toBeGreaterThanOrEqual(b.end);
  });
});
