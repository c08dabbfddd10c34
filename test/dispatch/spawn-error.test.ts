/**
 * Acceptance 10: a job whose program does not exist is a `spawn_error` result, never an exception;
 * the other jobs still run. Also: exactly one result per job, in file order, and the JUnit file.
 */
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch, scratch, statuses, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('a job that cannot start does not stop the others', () => {
  it('argv[0] missing → spawn_error; the other jobs run; one result per job in file order', async () => {
    s = scratch();
    const junit = join(s.dir, 'report.xml');
    const file = s.batch({
      jobs: [
        { name: 'before', devices: 1, argv: ['sh', '-c', 'echo before ran'] },
        { name: 'ghost', devices: 1, argv: ['berth-no-such-program-xyz', '--flag'] },
        { name: 'badcwd', devices: 0, argv: ['true'], cwd: join(s.dir, 'missing') },
        { name: 'after', devices: 2, argv: ['sh', '-c', 'echo after ran on {devices}'] },
      ],
    });
    const r = await dispatch(file, '--devices', '0-1', '--junit', junit);
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({
      before: 'passed',
      ghost: 'spawn_error',
      badcwd: 'spawn_error',
      after: 'passed',
    });
    expect(r.stdout).toMatch(/ERROR\s+ghost\s+cannot start berth-no-such-program-xyz: no such program/);
    expect(r.stdout).toMatch(/ERROR\s+badcwd\s+cwd \S+missing does not exist/);
    expect(r.stdout).toMatch(/^1\s+before[\s\S]*^2\s+ghost[\s\S]*^3\s+badcwd[\s\S]*^4\s+after/m);
    const xml = readFileSync(junit, 'utf8');
    expect(xml.match(/<testcase /g)).toHaveLength(4);
    expect(xml).toMatch(
      new RegExp(
        /<testcase name="ghost"[^>]*>\s*/.source +
          /<error message="spawn_error: cannot start berth-no-such-program-xyz: no such program"/.source,
      ),
    );
    expect(xml).toContain('after ran on 0,1'); // runs of two stay listed (SPEC D4)
  });

  it('a cwd that cannot be used says why, not that it does not exist (same words as a worker command)', async () => {
    s = scratch();
    const loop = join(s.dir, 'loop');
    symlinkSync(loop, loop); // stat fails ELOOP
    const file = s.batch({ jobs: [{ name: 'looped', devices: 0, argv: ['true'], cwd: loop }] });
    const r = await dispatch(file, '--devices', '0');
    expect(r.code).toBe(1);
    expect(statuses(r.stdout)).toEqual({ looped: 'spawn_error' });
    expect(r.stdout).toMatch(/ERROR\s+looped\s+cwd \S+loop cannot be used \(ELOOP\)/);
  });
});
