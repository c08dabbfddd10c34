/**
 * SPEC D7: on a terminal a live progress bar (done / running / queued / failed) replaces the
 * START and PASS lines; failures still print in full, and the batch runs the same.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runBatch } from '../../src/dispatch/batch-run.js';
import { parseBatch } from '../../src/dispatch/batch.js';
import { LocalRunner } from '../../src/dispatch/local-runner.js';
import { ConsoleReporter } from '../../src/dispatch/reporter.js';
import { DevicePool } from '../../src/resources/devices.js';
import { scratch, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('progress on a terminal', () => {
  it('a progress bar instead of START/PASS lines; the failure still printed with its output', async () => {
    s = scratch();
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const jobs = parseBatch([
      { name: 'p1', devices: 1, argv: ['true'] },
      { name: 'boom', devices: 1, shell: 'echo kaboom; exit 4' },
      { name: 'p2', devices: 1, argv: ['true'] },
      { name: 'p3', devices: 1, argv: ['true'] },
    ]);
    const reporter = new ConsoleReporter(out, true, jobs.length);
    const results = await runBatch(
      jobs,
      new LocalRunner('CUDA_VISIBLE_DEVICES'),
      {
        pool: new DevicePool([0, 1]),
        maxInFlight: 2,
        backfill: 0,
        failFast: false,
        graceMs: 1000,
        logDir: s.dir,
      },
      reporter,
    );
    reporter.end();
    expect(results.map((r) => r.status)).toEqual(['passed', 'failed', 'passed', 'passed']);
    expect(text).not.toMatch(/START|PASS/);
    expect(text).toMatch(/\x1b\[2K\[\.+\] 0\/4 done {2}0 running {2}4 queued {2}0 failed/);
    expect(text).toMatch(/\x1b\[2K\[#+\] 4\/4 done {2}0 running {2}0 queued {2}1 failed\n$/);
    expect(text).toMatch(/FAIL\s+boom\s+exit 4\s+devices \d[^\n]*\n----- output of boom[^\n]*\nkaboom\n-----/);
  });
});
