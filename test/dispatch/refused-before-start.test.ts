/**
 * Acceptance 2 (SPEC D2): a job needing more devices than the pool refuses the whole batch before
 * anything starts, naming the job and both numbers; exit 2. Bad batches and flags do the same.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
    expect(r.stderr).toMatch(
      /1 job needs more devices than there are: the pool has 4 devices \(0-3\)\n {2}jobs\[1\] \("huge"\) needs 8 devices\n/,
    );
    expect(started(s.dir, 'small')).toBe(false);
  });

  it('an invalid job names the job, its label and the field', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'ok', argv: ['true'] },
      { name: 'neg', devices: -1, argv: ['true'] },
    ]);
    const r = await dispatch(file, '--devices', '0-3');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/jobs\[1\] \("neg"\): devices: must be at least 0 \(got -1\)/);
  });

  it('a job env setting the device env is refused (SPEC R8): the devices are what dispatch grants', async () => {
    s = scratch();
    const file = s.batch([
      recordingJob(s.dir, 'first', 1, 0),
      { name: 'greedy', devices: 1, argv: ['true'], env: { ASCEND_RT_VISIBLE_DEVICES: '0,1,2,3' } },
    ]);
    const r = await dispatch(file, '--devices', '0-3', '--device-env', 'ASCEND_RT_VISIBLE_DEVICES');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'jobs[1] ("greedy"): env.ASCEND_RT_VISIBLE_DEVICES: set by dispatch from the devices the job gets (SPEC ' +
        'R8); a job cannot set it (got "0,1,2,3")',
    );
    expect(started(s.dir, 'first')).toBe(false);
  });

  it('a job with both argv and shell, or an unknown field, is refused', async () => {
    s = scratch();
    const both = s.batch([{ name: 'x', argv: ['true'], shell: 'true' }], 'both.json');
    expect((await dispatch(both, '--devices', '0')).stderr).toMatch(/jobs\[0\] \("x"\): argv\/shell: give exactly one/);
    const typo = s.batch({ jobs: [{ name: 'y', argv: ['true'], device: 1 }] }, 'typo.json');
    const r = await dispatch(typo, '--devices', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`typo.json line 8: jobs[0] ("y"): unknown key 'device' (did you mean 'devices'?)`);
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

  it('--junit into a missing directory: exit 2 naming the flag and the value, before any job runs', async () => {
    s = scratch();
    const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
    const r = await dispatch(file, '--devices', '0', '--junit', '/nonexistent/dir/x.xml');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /--junit: directory \/nonexistent\/dir does not exist \(got "\/nonexistent\/dir\/x\.xml"\)/,
    );
    expect(started(s.dir, 'a')).toBe(false);
  });

  it(
    '--log-dir that is a file, that cannot be created ' + '(/proc/nope: no hang) or written: exit 2 naming it',
    async () => {
      s = scratch();
      const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
      const plain = join(s.dir, 'plain');
      writeFileSync(plain, 'x');
      const asFile = await dispatch(file, '--devices', '0', '--log-dir', plain);
      expect(asFile.code).toBe(2);
      expect(asFile.stderr).toMatch(/--log-dir: \S+plain is not a directory/);
      // recursive mkdir spun forever here
      const proc = await dispatch(file, '--devices', '0', '--log-dir', '/proc/nope');
      expect(proc.code).toBe(2);
      expect(proc.stderr).toMatch(/--log-dir: cannot create \/proc\/nope \(got "\/proc\/nope"\): ENOENT/);
      const readOnly = await dispatch(file, '--devices', '0', '--log-dir', '/sys'); // not writable, even for root
      expect(readOnly.code).toBe(2);
      expect(readOnly.stderr).toMatch(/--log-dir: cannot write in \/sys/);
      expect(started(s.dir, 'a')).toBe(false);
    },
  );

  it('a missing --log-dir is created with its parents; the header pluralises', async () => {
    s = scratch();
    mkdirSync(join(s.dir, 'out'));
    const file = s.batch([recordingJob(s.dir, 'a', 0, 0)]);
    const r = await dispatch(file, '--devices', '0', '--log-dir', join(s.dir, 'out', 'x', 'y'));
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(s.dir, 'out', 'x', 'y'))).toBe(true);
    expect(r.stdout).toMatch(/^berth dispatch: 1 job on devices 0,/m);
  });
});
