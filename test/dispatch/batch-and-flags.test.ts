/**
 * Batch files and flags (SPEC D1): YAML or JSON, a bare list or { jobs }, errors naming the job
 * and the field; `-j auto` = devices, min(cores, devices) for a *sim platform, never below 1.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsLimit, resolveDispatchOptions } from '../../src/config/dispatch-options.js';
import { loadBatch } from '../../src/dispatch/batch.js';
import { ROOT, runBerth } from '../support/cli.js';
import { scratch, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('batch files and dispatch flags', () => {
  it('a YAML bare list and a JSON { jobs } load to the same jobs, in file order', async () => {
    s = scratch();
    const yaml = join(s.dir, 'b.yaml');
    writeFileSync(
      yaml,
      '- name: a\n  devices: 2\n  argv: [echo, "{devices}"]\n  timeout: 1.5\n- shell: echo hi\n  env: { SEED: 7 }\n',
    );
    const json = s.batch({
      jobs: [
        { name: 'a', devices: 2, argv: ['echo', '{devices}'], timeout: 1.5 },
        { shell: 'echo hi', env: { SEED: 7 } },
      ],
    });
    const fromYaml = await loadBatch(yaml);
    expect(fromYaml).toEqual(await loadBatch(json));
    expect(fromYaml[0]).toMatchObject({ index: 0, name: 'a', devices: 2, timeoutMs: 1500 });
    expect(fromYaml[1]).toMatchObject({ index: 1, name: 'job2', devices: 0, env: { SEED: '7' } });
  });

  it('errors name the file, the line, the job (jobs[i] and its name), the field and the value', async () => {
    s = scratch();
    await expect(
      loadBatch(
        s.batch([
          { name: 'ok', argv: ['true'] },
          { name: 'bad', devices: 1.5, argv: ['true'] },
        ]),
      ),
    ).rejects.toThrow(
      /batch\.json line 10: jobs\[1\] \("bad"\): devices: expected a whole number of devices, or a share .*\(got 1\.5\)/,
    );
    await expect(loadBatch(s.batch([{ name: 'e', argv: [] }]))).rejects.toThrow(
      /line 4: jobs\[0\] \("e"\): argv: must hold at least the program/,
    );
    await expect(loadBatch(s.batch({ jobs: [] }))).rejects.toThrow(/holds no jobs/);
    // a NUL byte cannot reach a process: refused with the batch, before anything starts
    await expect(loadBatch(s.batch([{ name: 'nul', argv: ['echo', 'a\0b'] }]))).rejects.toThrow(
      /jobs\[0\] \("nul"\): argv\.1: must not hold a NUL byte/,
    );
    await expect(loadBatch(join(s.dir, 'missing.yaml'))).rejects.toThrow(/missing\.yaml: cannot read/);
  });

  it('-j auto: devices; min(cores, devices) on a *sim platform; never below 1; -j 0 refused', () => {
    expect(jobsLimit('auto', 8, 2)).toBe(8);
    expect(jobsLimit('auto', 8, 2, 'ascend-sim')).toBe(2);
    expect(jobsLimit('auto', 0, 2)).toBe(1);
    expect(jobsLimit(3, 8, 2)).toBe(3);
    expect(() => resolveDispatchOptions({ jobs: '0' })).toThrow(/-j\/--jobs: must be at least 1/);
    expect(resolveDispatchOptions({ jobs: 'auto', backfill: true, devices: '0,2-3' })).toMatchObject({
      jobs: 'auto',
      overtakes: 10,
      devices: [0, 2, 3],
    });
    expect(resolveDispatchOptions({})).toMatchObject({ overtakes: 0 }); // strict FIFO
    expect(resolveDispatchOptions({ backfill: true, maxOvertakes: '3' })).toMatchObject({ overtakes: 3 });
    expect(() => resolveDispatchOptions({ maxOvertakes: '3' })).toThrow(/--max-overtakes: only used with --backfill/);
    expect(() => resolveDispatchOptions({ backfill: true, maxOvertakes: '0' })).toThrow(
      /--max-overtakes: must be at least 1 \(got "0"\)/,
    );
    expect(() => resolveDispatchOptions({ devices: '1,0-2' })).toThrow(/--devices: device 1 is listed twice/);
    expect(() => resolveDispatchOptions({ deviceEnv: 'bad-name' })).toThrow(/--device-env/);
  });

  it('names: control characters and duplicates are refused, naming the job and the field', async () => {
    s = scratch();
    await expect(
      loadBatch(
        s!.batch([
          { name: 'ok', argv: ['true'] },
          { name: 'x\nPASS      fake', argv: ['true'] },
        ]),
      ),
    ).rejects.toThrow(/jobs\[1\] \("x\\nPASS {6}fake"\): name: must not hold control characters/);
    await expect(loadBatch(s!.batch([{ name: 'tab\there', argv: ['true'] }]))).rejects.toThrow(
      /jobs\[0\] .*name: must not hold control characters/,
    );
    await expect(
      loadBatch(
        s!.batch([
          { name: 'same', argv: ['true'] },
          { name: 'other', argv: ['true'] },
          { name: 'same', argv: ['true'] },
        ]),
      ),
    ).rejects.toThrow(/jobs\[2\] \("same"\): name: "same" is already the name of jobs\[0\] \("same"\)/);
    await expect(loadBatch(s!.batch([{ argv: ['true'] }, { name: 'job1', argv: ['true'] }]))).rejects.toThrow(
      /jobs\[1\] \("job1"\): name: "job1" is already the name of jobs\[0\] \("job1"\)/,
    );
  });

  it('a huge device count or timeout says the bound, not "expected a whole number"', async () => {
    s = scratch();
    const huge = join(s.dir, 'huge.yaml');
    writeFileSync(huge, '- name: h\n  devices: 99999999999999999999\n  argv: [true]\n');
    await expect(loadBatch(huge)).rejects.toThrow(
      /huge\.yaml line 2: jobs\[0\] \("h"\): devices: must be at most 65536/,
    );
    await expect(loadBatch(s!.batch([{ name: 't', timeout: 1e10, argv: ['true'] }]))).rejects.toThrow(
      /timeout: must be at most 2147483 seconds/,
    );
    expect(() => resolveDispatchOptions({ timeout: '9999999999' })).toThrow(/--timeout: must be at most 2147483/);
  });

  it("a relative cwd is taken from the batch file's directory, not from where dispatch runs", async () => {
    s = scratch();
    const file = s.batch(
      [
        { name: 'c', cwd: 'sub', argv: ['true'] },
        { name: 'd', cwd: '/abs', argv: ['true'] },
        { name: 'e', argv: ['true'] },
      ],
      'b.json',
    );
    const [c, d, e] = await loadBatch(file);
    expect(c.cwd).toBe(join(s.dir, 'sub'));
    expect(d.cwd).toBe('/abs');
    expect(e.cwd).toBeUndefined(); // none given: dispatch's own working directory
  });

  it('--help and the dispatch guide give the same exit codes and list every flag', async () => {
    const help = await runBerth(['dispatch', '--help']);
    expect(help.code).toBe(0);
    const section = readFileSync(join(ROOT, 'docs', 'guide-dispatch.md'), 'utf8');
    const exitText = (t: string) =>
      /Exit code: ([\s\S]*?SIGTERM\.)/.exec(t)?.[1].replace(/`/g, '').replace(/\s+/g, ' ').replace(/ \/ /g, '/').trim();
    expect(exitText(section)).toBeDefined();
    expect(exitText(section)).toBe(exitText(help.stdout));
    for (const flag of help.stdout.matchAll(/^\s+(?:-\w, )?(--[a-z-]+)/gm)) {
      if (flag[1] !== '--help') expect(section, flag[1]).toContain(`\`${flag[1]}`);
    }
    expect(section).not.toMatch(/issue #4/);
  });
});
