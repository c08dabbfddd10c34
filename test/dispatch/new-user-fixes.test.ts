/**
 * Dispatch as a new user meets it (issue 11 item 5): a `--server` job without `cwd` runs in
 * dispatch's own working directory (as the README says); device ids need not be consecutive; a
 * timed-out job's output is shown once; a host with no GPUs and no `--devices` says to pass it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { finished, runBerth, spawnBerth } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { dispatch, scratch, statuses, withLogDir, type Scratch } from './support.js';

let s: Scratch | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  s?.cleanup();
  await t?.close();
  s = undefined;
  t = undefined;
});

function hasGpus(): boolean {
  try {
    return /^GPU \d+:/m.test(execFileSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 5000 }));
  } catch {
    return false;
  }
}

describe('dispatch does what the README says', () => {
  it("--server: a job without cwd runs in the directory dispatch was started in, not the server's", async () => {
    s = scratch();
    t = await startServer({ cpus: 2 }); // the engine host runs commands; its own cwd is the test's
    const here = join(s.dir, 'started-here');
    mkdirSync(here);
    const file = s.batch([{ name: 'where', devices: 0, shell: 'pwd > where.txt' }]);
    const r = await finished(spawnBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address])], {}, here));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(here, 'where.txt'), 'utf8').trim()).toBe(realpathSync(here));
  });

  it('device ids need not be consecutive: with 0,1 and 3 free a 3-device job gets 0,1,3 at once', async () => {
    s = scratch();
    const d = s.dir;
    const file = s.batch([
      { name: 'pair', devices: 2, argv: ['true'] }, // 0-1, ends at once
      { name: 'holder', devices: 1, shell: `until [ -e '${d}/wide.rec' ]; do sleep 0.02; done` }, // 2, until wide ran
      { name: 'single', devices: 1, argv: ['true'] }, // 3, ends at once
      {
        name: 'wide',
        devices: 3,
        shell: `echo "{devices} $CUDA_VISIBLE_DEVICES" > '${d}/wide.tmp'; mv '${d}/wide.tmp' '${d}/wide.rec'`,
      },
    ]);
    const r = await dispatch(file, '--devices', '0-3', '--backfill');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(d, 'wide.rec'), 'utf8')).toBe('0,1,3 0,1,3\n');
  });

  it("a timed-out job's output is shown once, when it is stopped, not again at its end", async () => {
    s = scratch();
    const file = s.batch([{ name: 'stuck', devices: 0, timeout: 0.5, shell: 'echo only-once-please; sleep 30' }]);
    const r = await dispatch(file, '--devices', '', '--grace', '1');
    expect(statuses(r.stdout)).toEqual({ stuck: 'timed_out' });
    expect(r.stdout.split('only-once-please').length - 1).toBe(1);
    expect(r.stdout).toMatch(
      /TIMEOUT\s+stuck\s+signal SIGTERM[^\n]*\n\(output up to the stop shown above; full log \S+001-stuck\.log\)/,
    );
  });

  it.skipIf(hasGpus())(
    'no --devices on a host without GPUs: 30 jobs needing devices are refused with the hint said once',
    async () => {
      s = scratch();
      const file = s.batch(Array.from({ length: 30 }, (_, i) => ({ name: `train${i}`, devices: 2, argv: ['true'] })));
      const r = await runBerth(['dispatch', file, ...withLogDir(file, [])]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          /30 jobs need more devices than there are: the pool has no devices\n/.source +
            /no GPUs were detected on this host \(nvidia-smi -L\): pass --devices/.source,
        ),
      );
      expect(r.stderr.split('nvidia-smi').length - 1).toBe(1);
      expect(r.stderr).toContain('  jobs[4] ("train4") needs 2 devices\n  and 25 more\nnothing was started');
      expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(9);
    },
  );
});
