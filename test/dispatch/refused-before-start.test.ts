/**
 * Acceptance 2 (SPEC D2): a job needing more devices than the pool refuses the whole batch before
 * anything starts, naming the job and both numbers; exit 2. Bad batches and flags do the same.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch, recordingJob, scratch, started, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('a batch that cannot run is refused before anything starts', () => {
  it('pool 0-3 and a job needing 8: the message names the job, 8 and 4; exit 2', async () => {
    s = scratch();
    const file = s.batch({ jobs: [recordingJob(s.dir, 'small', 1, 0), recordingJob(s.dir, 'huge', 8, 0)] });
    const r = await dispatch(file, '--devices', '0-3');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/job 2 \("huge"\) needs 8 devices but the pool has 4 devices \(0-3\)/);
    expect(started(s.dir, 'small')).toBe(false);
  });

  it('an invalid job names the job, its label and the field', async () => {
    s = scratch();
    const file = s.batch([{ label: 'ok', argv: ['true'] }, { label: 'neg', devices: -1, argv: ['true'] }]);
    const r = await dispatch(file, '--devices', '0-3');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/job 2 \("neg"\): devices: must be at least 0 \(got -1\)/);
  });

  it('a job with both argv and shell, or an unknown field, is refused', async () => {
    s = scratch();
    const both = s.batch([{ label: 'x', argv: ['true'], shell: 'true' }], 'both.json');
    expect((await dispatch(both, '--devices', '0')).stderr).toMatch(/job 1 \("x"\): argv\/shell: give exactly one/);
    const typo = s.batch({ jobs: [{ label: 'y', argv: ['true'], device: 1 }] }, 'typo.json');
    const r = await dispatch(typo, '--devices', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/job 1 \("y"\).*device/);
  });

  it('-j 0 and duplicate ids in --devices are usage errors', async () => {
    s = scratch();
    const file = s.batch([recordingJob(s.dir, 'a', 1, 0)]);
    const j0 = await dispatch(file, '--devices', '0-3', '-j', '0');
    expect(j0.code).toBe(2);
    expect(j0.stderr).toMatch(/-j\/--jobs: must be at least 1 or auto \(got "0"\)/);
    const dup = await dispatch(file, '--devices', '0-3,2');
    expect(dup.code).toBe(2);
    expect(dup.stderr).toMatch(/--devices: device 2 is listed twice/);
    expect(started(s.dir, 'a')).toBe(false);
  });
});
