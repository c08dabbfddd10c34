/**
 * Batch files and flags (SPEC D1): YAML or JSON, a bare list or { jobs }, errors naming the job
 * and the field; `-j auto` = devices, min(cores, devices) for a *sim platform, never below 1.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsLimit, resolveDispatchOptions } from '../../src/config/dispatch-options.js';
import { loadBatch } from '../../src/dispatch/batch.js';
import { scratch, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('batch files and dispatch flags', () => {
  it('a YAML bare list and a JSON { jobs } load to the same jobs, in file order', () => {
    s = scratch();
    const yaml = join(s.dir, 'b.yaml');
    writeFileSync(yaml, '- label: a\n  devices: 2\n  argv: [echo, "{devices}"]\n  timeout: 1.5\n- shell: echo hi\n  env: { SEED: 7 }\n');
    const json = s.batch({ jobs: [{ label: 'a', devices: 2, argv: ['echo', '{devices}'], timeout: 1.5 }, { shell: 'echo hi', env: { SEED: 7 } }] });
    const fromYaml = loadBatch(yaml);
    expect(fromYaml).toEqual(loadBatch(json));
    expect(fromYaml[0]).toMatchObject({ index: 0, label: 'a', devices: 2, timeoutMs: 1500 });
    expect(fromYaml[1]).toMatchObject({ index: 1, label: 'job2', devices: 0, env: { SEED: '7' } });
  });

  it('errors name the file, the job number and label, the field and the value', () => {
    s = scratch();
    expect(() => loadBatch(s.batch([{ label: 'ok', argv: ['true'] }, { label: 'bad', devices: 1.5, argv: ['true'] }])))
      .toThrow(/job 2 \("bad"\): devices: expected a whole number \(got 1\.5\)/);
    expect(() => loadBatch(s.batch([{ label: 'e', argv: [] }]))).toThrow(/job 1 \("e"\): argv: must hold at least the program/);
    expect(() => loadBatch(s.batch({ jobs: [] }))).toThrow(/holds no jobs/);
    expect(() => loadBatch(join(s.dir, 'missing.yaml'))).toThrow(/missing\.yaml: cannot read/);
  });

  it('-j auto: devices; min(cores, devices) on a *sim platform; never below 1; -j 0 refused', () => {
    expect(jobsLimit('auto', 8, 2)).toBe(8);
    expect(jobsLimit('auto', 8, 2, 'ascend-sim')).toBe(2);
    expect(jobsLimit('auto', 0, 2)).toBe(1);
    expect(jobsLimit(3, 8, 2)).toBe(3);
    expect(() => resolveDispatchOptions({ jobs: '0' })).toThrow(/-j\/--jobs: must be at least 1/);
    expect(resolveDispatchOptions({ jobs: 'auto', backfill: true, devices: '0,2-3' })).toMatchObject({ jobs: 'auto', backfill: 10, devices: [0, 2, 3] });
    expect(() => resolveDispatchOptions({ devices: '1,0-2' })).toThrow(/--devices: device 1 is listed twice/);
    expect(() => resolveDispatchOptions({ deviceEnv: 'bad-name' })).toThrow(/--device-env/);
  });
});
