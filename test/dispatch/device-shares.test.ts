/**
 * Issue 23 item 6: `berth dispatch` jobs may ask a share of one device (`devices: 0.5`) and, with `--server`, named
 * resources. Locally a share lands on one id that other shares fill up to 1, never one a whole job holds (SPEC
 * P14); the job sees the id and BERTH_GPU_SHARE. Bad values and local named resources exit 2 before anything runs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { dispatch, readRecord, recordingJob, scratch, started, statuses, type Scratch } from './support.js';

let s: Scratch | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  s?.cleanup();
  await t?.close();
  s = undefined;
  t = undefined;
});

/** A job that records as recordingJob does and writes its BERTH_GPU_SHARE to `<label>.share`. */
function shareJob(dir: string, label: string, devices: number, seconds: number, extra: Record<string, unknown> = {}) {
  const job = recordingJob(dir, label, devices, seconds, extra);
  return { ...job, shell: `echo "$BERTH_GPU_SHARE" > '${join(dir, `${label}.share`)}'; ${job.shell}` };
}

describe('dispatch: a share of one device (devices: 0.5)', () => {
  it('4 jobs of 0.5 on devices 0-1 run at once, two per id, each told its share; -j auto counts shares', async () => {
    s = scratch();
    const labels = ['h1', 'h2', 'h3', 'h4'];
    const file = s.batch({ jobs: labels.map((l) => shareJob(s!.dir, l, 0.5, 1.5)) });
    const r = await dispatch(file, '--devices', '0-1');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/-j 4,/);
    expect(Object.values(statuses(r.stdout))).toEqual(Array(4).fill('passed'));
    const recs = labels.map((l) => readRecord(s!.dir, l));
    for (const rec of recs) {
      expect(['0', '1']).toContain(rec.devices); // exactly one id
      expect(rec.envDevices).toBe(rec.devices);
      expect(readFileSync(join(s.dir, `${rec.label}.share`), 'utf8').trim()).toBe('0.5');
    }
    // all four were admitted at once (each started before any ended): two shares on each id
    const firstEnd = Math.min(...recs.map((x) => x.end));
    expect(recs.filter((x) => x.start < firstEnd)).toHaveLength(4);
    expect(recs.filter((x) => x.devices === '0')).toHaveLength(2);
    expect(recs.filter((x) => x.devices === '1')).toHaveLength(2);
  });

  it('on one device a whole job and shares never run at once; shares over 1 wait', async () => {
    s = scratch();
    const jobs = [
      shareJob(s.dir, 'a', 0.6, 0.4),
      shareJob(s.dir, 'b', 0.6, 0.4), // 0.6 + 0.6 > 1: waits for a
      shareJob(s.dir, 'whole', 1, 0.4), // waits until no share is held
      shareJob(s.dir, 'c', 0.4, 0.4),
    ];
    const r = await dispatch(s.batch({ jobs }), '--devices', '0', '-j', '4', '--backfill');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const recs = ['a', 'b', 'whole', 'c'].map((l) => readRecord(s!.dir, l));
    const share = { a: 0.6, b: 0.6, whole: 1, c: 0.4 } as Record<string, number>;
    for (const x of recs) {
      const live = recs.filter((y) => y.start <= x.start && x.start < y.end);
      const held = live.reduce((sum, y) => sum + share[y.label], 0);
      expect(held, `at the start of ${x.label}: ${live.map((y) => y.label).join(', ')}`).toBeLessThanOrEqual(1 + 1e-9);
    }
    expect(readFileSync(join(s.dir, 'whole.share'), 'utf8').trim()).toBe(''); // a whole job is told no share
  });

  it.each([
    [1.5, /jobs\[0\] \("bad"\): devices: expected a whole number of devices, or a share of one device.*\(got 1\.5\)/],
    [0.00005, /devices: .*in steps of 0\.0001.*\(got 0\.00005\)/],
  ])('devices: %s is refused naming the job, the key and the value; exit 2, nothing started', async (v, msg) => {
    s = scratch();
    const r = await dispatch(s.batch([recordingJob(s.dir, 'bad', v, 0)]), '--devices', '0-1');
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(msg);
    expect(started(s.dir, 'bad')).toBe(false);
  });

  it('a job setting BERTH_GPU_SHARE itself is refused (SPEC R8): exit 2 naming env.BERTH_GPU_SHARE', async () => {
    s = scratch();
    const r = await dispatch(s.batch([recordingJob(s.dir, 'j', 0.5, 0, { env: { BERTH_GPU_SHARE: '1' } })]));
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/env\.BERTH_GPU_SHARE: set by dispatch/);
  });
});

describe('dispatch: named resources (resources:)', () => {
  it('without --server the batch is refused naming the job and the resource; exit 2, nothing started', async () => {
    s = scratch();
    const r = await dispatch(s.batch([recordingJob(s.dir, 'n', 0, 0, { resources: { trainer: 1 } })]));
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/jobs\[0\] \("n"\): resources: trainer: named resources are those of berth's machines/);
    expect(started(s.dir, 'n')).toBe(false);
  });

  it('a bad resource name or quantity names the key and the value', async () => {
    s = scratch();
    const r = await dispatch(s.batch([recordingJob(s.dir, 'n', 0, 0, { resources: { trainer: -1 } })]));
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/resources\.trainer: a number from 0 to .* in steps of 0\.0001 \(got -1\)/);
  });

  it('with --server: jobs taking the one trainer run one at a time; a share lands on one GPU with its env', async () => {
    s = scratch();
    t = await startServer({ cpus: 4, gpuIds: [0], resources: { trainer: 10_000 } });
    const jobs = [
      shareJob(s.dir, 't1', 0, 0.3, { resources: { trainer: 1 } }),
      shareJob(s.dir, 't2', 0, 0.3, { resources: { trainer: 1 } }),
      shareJob(s.dir, 'half', 0.5, 0.1),
    ];
    const r = await dispatch(s.batch({ jobs }), '--server', t.address);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [t1, t2, half] = ['t1', 't2', 'half'].map((l) => readRecord(s!.dir, l));
    expect(t1.end <= t2.start || t2.end <= t1.start).toBe(true); // one trainer: never both at once
    expect(half.envDevices).toBe('0');
    expect(readFileSync(join(s.dir, 'half.share'), 'utf8').trim()).toBe('0.5');
    expect(t.invariantErrors).toEqual([]);
  });

  it('with --server: a resource no machine has makes that job an error naming it', async () => {
    s = scratch();
    t = await startServer({ cpus: 2 });
    const r = await dispatch(
      s.batch([recordingJob(s.dir, 'x', 0, 0, { resources: { dongle: 1 } }), recordingJob(s.dir, 'ok', 0, 0)]),
      '--server',
      t.address,
    );
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(statuses(r.stdout)).toEqual({ x: 'error', ok: 'passed' });
    expect(r.stdout + r.stderr).toMatch(/dongle/);
    expect(started(s.dir, 'x')).toBe(false);
  });
});
