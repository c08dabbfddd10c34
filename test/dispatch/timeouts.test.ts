/**
 * Acceptance 8 (SPEC D7): a job past its timeout is `timed_out`, its output so far is shown before
 * it is stopped, and the other jobs pass. The batch --timeout stops everything still running.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { liveMembers } from '../support/process-groups.js';
import { dispatch, pids, scratch, statuses, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('timeouts stop stuck jobs and show what they printed', () => {
  it('a job past its timeout is timed_out with its output so far; the others pass', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'stuck', devices: 1, timeout: 0.5, shell: 'echo step-one-done; sleep 30' },
      { name: 'fine', devices: 1, shell: 'sleep 0.8; echo fine' },
      { name: 'quick', devices: 0, argv: ['true'] },
    ]);
    const r = await dispatch(file, '--devices', '0-1', '--grace', '1');
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({ stuck: 'timed_out', fine: 'passed', quick: 'passed' });
    expect(r.stdout).toMatch(
      /STUCK\s+stuck\s+past its timeout[^\n]*\n----- recent output of stuck[^\n]*\nstep-one-done\n/,
    );
    expect(r.stdout).toMatch(/TIMEOUT\s+stuck\s+signal SIGTERM/);
    expect(liveMembers(pids(r.stdout).stuck)).toEqual([]);
  });

  it('a job that opts in gets SIGUSR1 before it is stopped, for a stack dump', async () => {
    s = scratch();
    const file = s.batch([
      {
        name: 'dumps',
        devices: 0,
        timeout: 0.5,
        stack_dump_signal: true,
        shell: "trap 'echo STACK DUMP' USR1; echo started; while true; do sleep 30 & wait $!; done",
      },
    ]);
    const r = await dispatch(file, '--devices', '', '--grace', '1');
    expect(statuses(r.stdout)).toEqual({ dumps: 'timed_out' });
    expect(r.stdout).toMatch(
      new RegExp(
        /----- recent output of dumps[^\n]*\nstarted\n/.source +
          /\[berth dispatch\] timed out: sent SIGUSR1 for a stack dump\nSTACK DUMP\n-----/.source,
      ),
    );
  });

  it('a job that dies of the stack-dump signal itself is still timed_out', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'fragile', devices: 0, timeout: 0.3, stack_dump_signal: true, argv: ['sleep', '30'] },
    ]);
    const r = await dispatch(file, '--devices', '', '--grace', '1');
    expect(statuses(r.stdout)).toEqual({ fragile: 'timed_out' });
    expect(r.stdout).toMatch(/TIMEOUT\s+fragile\s+signal SIGUSR1/);
  });

  it('the batch --timeout stops running jobs and skips the queue', async () => {
    s = scratch();
    const file = s.batch([
      { name: 'first', devices: 1, argv: ['sleep', '30'] },
      { name: 'second', devices: 1, argv: ['true'] },
    ]);
    const r = await dispatch(file, '--devices', '0', '--timeout', '0.5', '--grace', '1');
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({ first: 'timed_out', second: 'skipped' });
    expect(r.stdout).toMatch(/batch timeout of 0\.5 s reached/);
  });
});
