/**
 * Acceptance 3 and 4 (SPEC D3, D4): 8 jobs of 2 devices on pool 0-3 never hold more than 4
 * devices nor one id twice, run two at a time (wall ≈ 4 × 0.3 s); with -j 1 strictly one at a time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseRange } from '../../src/resources/ranges.js';
import { dispatch, readRecord, recordingJob, scratch, statuses, type JobRecord, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

function overlapping(a: JobRecord, b: JobRecord): boolean {
  return a.start < b.end && b.start < a.end;
}

describe('devices are never shared and never over-used', () => {
  it(
    '8 jobs of 2 devices on pool 0-3: ≤ 4 devices held, ' + 'no id in two running jobs, wall ≈ 4 × 0.3 s',
    async () => {
      s = scratch();
      const labels = Array.from({ length: 8 }, (_, i) => `pair${i + 1}`);
      const file = s.batch({ jobs: labels.map((l) => recordingJob(s.dir, l, 2, 0.3)) });
      const r = await dispatch(file, '--devices', '0-3');
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(Object.values(statuses(r.stdout))).toEqual(Array(8).fill('passed'));
      const recs = labels.map((l) => readRecord(s.dir, l));
      for (const rec of recs) {
        // {devices} is the range string, CUDA_VISIBLE_DEVICES the comma list CUDA parses: same ids
        expect(rec.envDevices).toBe(parseRange(rec.devices).join(','));
        expect(parseRange(rec.devices)).toHaveLength(2);
      }
      // at every job start, the jobs running then hold ≤ 4 devices and no id twice
      for (const a of recs) {
        const live = recs.filter((b) => b.start <= a.start && a.start < b.end);
        const ids = live.flatMap((b) => parseRange(b.devices));
        expect(ids.length).toBeLessThanOrEqual(4);
        expect(new Set(ids).size).toBe(ids.length);
      }
      for (const a of recs)
        for (const b of recs) {
          if (a !== b && overlapping(a, b))
            expect(parseRange(a.devices).filter((id) => parseRange(b.devices).includes(id))).toEqual([]);
        }
      // two at a time really happened
      expect(recs.some((a) => recs.some((b) => a !== b && overlapping(a, b)))).toBe(true);
      const wall = Math.max(...recs.map((x) => x.end)) - Math.min(...recs.map((x) => x.start));
      expect(wall).toBeLessThan(4 * 0.3 + 1.5); // one at a time would take ≥ 2.4 s
    },
  );

  it('-j 1: strictly one job at a time even with devices free', async () => {
    s = scratch();
    const labels = ['one', 'two', 'three', 'four'];
    const file = s.batch(labels.map((l) => recordingJob(s.dir, l, 1, 0.2)));
    const r = await dispatch(file, '--devices', '0-3', '-j', '1');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const recs = labels.map((l) => readRecord(s.dir, l));
    for (let i = 1; i < recs.length; i++) expect(recs[i].start).toBeGreaterThanOrEqual(recs[i - 1].end);
    for (const rec of recs) expect(rec.devices).toBe('0'); // the lowest free id each time
  });
});
