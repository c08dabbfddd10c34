/**
 * Acceptance 6 and 7 (SPEC D6, D7): with --fail-fast the first failure skips the queue and stops
 * running jobs (SIGTERM, SIGKILL after the grace, even for a job that traps SIGTERM), and no
 * process is left; without it a failure stops nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { finished, spawnBerth } from '../support/cli.js';
import { liveMembers } from '../support/process-groups.js';
import { dispatch, pids, scratch, statuses, withLogDir, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('fail-fast really stops, and a failure alone stops nothing', () => {
  it(
    '--fail-fast: job 2 of 6 fails; 1 and 3 (trapping SIGTERM) cancelled within grace + 1 s, 4–6 skipped, ' +
      'nothing left',
    async () => {
      s = scratch();
      const file = s.batch([
        { name: 'sleeper', devices: 1, argv: ['sleep', '30'] },
        { name: 'failer', devices: 1, shell: 'sleep 0.5; echo failing; exit 1' },
        {
          name: 'stubborn',
          devices: 1,
          shell: "trap 'echo ignoring TERM' TERM; while true; do sleep 30 & wait $!; done",
        },
        { name: 'four', devices: 1, argv: ['true'] },
        { name: 'five', devices: 1, argv: ['true'] },
        { name: 'six', devices: 1, argv: ['true'] },
      ]);
      const child = spawnBerth([
        'dispatch',
        file,
        ...withLogDir(file, ['--devices', '0-2', '--fail-fast', '--grace', '1']),
      ]);
      let failedAt = 0;
      child.stdout!.on('data', (d: Buffer) => {
        if (failedAt === 0 && /^FAIL\s+failer/m.test(d.toString())) failedAt = Date.now();
      });
      const r = await finished(child);
      const elapsed = Date.now() - failedAt;
      expect(failedAt).toBeGreaterThan(0);
      expect(elapsed).toBeLessThan(5000); // grace 1 s + 1 s, with slack for a busy machine
      expect(r.code).toBe(1);
      expect(statuses(r.stdout)).toEqual({
        sleeper: 'cancelled',
        failer: 'failed',
        stubborn: 'cancelled',
        four: 'skipped',
        five: 'skipped',
        six: 'skipped',
      });
      expect(r.stdout).toMatch(/CANCELLED\s+stubborn\s+signal SIGKILL/);
      expect(r.stdout).toContain('ignoring TERM');
      const started = pids(r.stdout);
      expect(Object.keys(started).sort()).toEqual(['failer', 'sleeper', 'stubborn']);
      for (const pid of Object.values(started)) expect(liveMembers(pid)).toEqual([]);
    },
  );

  it('SIGTERM to dispatch stops the batch the same way and leaves no process', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'long', devices: 1, argv: ['sleep', '30'] },
      { name: 'later', devices: 1, argv: ['true'] },
    ]);
    const child = spawnBerth(['dispatch', file, ...withLogDir(file, ['--devices', '0', '--grace', '1'])]);
    const done = finished(child);
    await new Promise<void>((resolve) =>
      child.stdout!.on('data', (d: Buffer) => /^START\s+long/m.test(d.toString()) && resolve()),
    );
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(143);
    expect(statuses(r.stdout)).toEqual({ long: 'cancelled', later: 'skipped' });
    expect(liveMembers(pids(r.stdout).long)).toEqual([]);
  });

  it('without --fail-fast a failure stops nothing; the counts are right; exit 1', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'bad', devices: 1, shell: 'echo broken >&2; exit 7' },
      { name: 'slow', devices: 1, argv: ['sleep', '0.3'] },
      { name: 'ok1', devices: 1, argv: ['true'] },
      { name: 'ok2', devices: 2, argv: ['true'] },
    ]);
    const r = await dispatch(file, '--devices', '0-1');
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({ bad: 'failed', slow: 'passed', ok1: 'passed', ok2: 'passed' });
    expect(r.stdout).toMatch(/4 jobs: 3 passed, 1 failed/);
    expect(r.stdout).toMatch(/FAIL\s+bad\s+exit 7/);
    expect(r.stdout).toMatch(/----- output of bad[^\n]*\nbroken\n-----/);
    expect(r.stdout).toMatch(/failures:\n\s+FAIL bad \(devices 0\): exit 7; log \S+001-bad\.log/);
  });
});
