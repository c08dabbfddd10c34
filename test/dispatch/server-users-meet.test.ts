/**
 * `berth dispatch --server` as users meet it (issue 24 item 6): jobs still waiting in berth's queue
 * when the batch stops (fail-fast, Ctrl-C) are `skipped`, as queued jobs are locally — JUnit
 * skipped, no log file saying SIGTERM was sent; START lines carry no `pid -`; a job's `require:` or
 * `prefer:` machine label reaches berth as the Run's ask; the old `label:` works with a note.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { dispatch, scratch, statuses, withLogDir, type Scratch } from './support.js';

let s: Scratch | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  s?.cleanup();
  await t?.close();
  s = undefined;
  t = undefined;
});

/** Log files dispatch wrote (one per job that printed or was noted). */
function logFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

describe('--server: jobs that never started are skipped', () => {
  it('--fail-fast: the failed job and the one holding the GPU end; the two waiting for it in berth are skipped', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [0] }); // one GPU: one GPU job runs, two wait in berth's queue
    const gpuJobs = ['g1', 'g2', 'g3'].map((name) => ({ name, devices: 1, argv: ['sleep', '30'] }));
    const file = s.batch({ jobs: [...gpuJobs, { name: 'failer', shell: 'echo failing; sleep 0.3; exit 1' }] });
    const junit = join(s.dir, 'report.xml');
    const r = await dispatch(file, '--server', t.address, '--fail-fast', '--grace', '1', '--junit', junit);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const st = statuses(r.stdout);
    expect(st.failer).toBe('failed');
    expect(['g1', 'g2', 'g3'].map((n) => st[n]).sort()).toEqual(['cancelled', 'skipped', 'skipped']);
    expect(r.stdout.match(/^START /gm)).toHaveLength(2);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuite [^>]*errors="1"[^>]*skipped="2"/); // the cancelled one is the error
    // logs: the failer's and the cancelled job's only; a skipped job has none (no SIGTERM was sent to it)
    const ran = ['g1', 'g2', 'g3'].find((n) => st[n] === 'cancelled')!;
    expect(
      logFiles(join(s.dir, 'logs'))
        .map((f) => f.replace(/^\d+-|\.log$/g, ''))
        .sort(),
    ).toEqual([ran, 'failer'].sort());
    expect((await snapshot(t.placement)).waiting).toEqual([]); // the waiting Runs were withdrawn
  });

  it('Ctrl-C: the running job is cancelled, the waiting ones skipped, exit 130; START shows no pid -', async () => {
    s = scratch();
    t = await startServer({ cpus: 1, gpuIds: [] });
    const file = s.batch(['x', 'y', 'z'].map((name) => ({ name, argv: ['sleep', '30'] })));
    const child = spawnBerth(['dispatch', file, ...withLogDir(file, ['--server', t.address, '--grace', '1'])]);
    const done = finished(child);
    const start = await waitForLine(child, /^START /);
    expect(start).toMatch(/^START {5}[xyz] {2}devices none on engine$/);
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(130);
    const ran = /^START {5}(\S+)/.exec(start)![1];
    const st = statuses(r.stdout);
    expect(st[ran]).toBe('cancelled');
    expect(Object.entries(st).filter(([, v]) => v === 'skipped')).toHaveLength(2);
    expect(r.stdout).not.toContain('pid -');
    for (const f of logFiles(join(s.dir, 'logs'))) expect(f).toMatch(new RegExp(`-${ran}\\.log$`));
    // dispatch may exit before berth has seen the cancelled Run's process end: the claim goes within the grace
    await expect.poll(async () => (await snapshot(t!.placement)).held, { timeout: 5000 }).toEqual([]);
  });
});

describe('require: and prefer: a machine label', () => {
  it('reach berth as the ask: require lands on the labelled engine or fails naming the label; prefer falls back', async () => {
    s = scratch();
    t = await startServer({ cpus: 2, gpuIds: [], flags: { engineLabels: 'big', reconnectGrace: 0 } });
    const file = s.batch([
      { name: 'must', require: 'big', argv: ['true'] },
      { name: 'nowhere', require: 'tpu', argv: ['true'] },
      { name: 'rather', prefer: 'tpu', argv: ['true'] },
    ]);
    const r = await dispatch(file, '--server', t.address);
    expect(statuses(r.stdout)).toEqual({ must: 'passed', nowhere: 'error', rather: 'passed' });
    expect(r.stdout).toMatch(/^ERROR +nowhere .*tpu/m);
  });

  it('without --server: require is refused before anything starts; prefer is ignored with one note', async () => {
    s = scratch();
    const req = s.batch([{ name: 'a', require: 'a100', argv: ['true'] }], 'req.json');
    const refused = await dispatch(req, '--devices', '0');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'jobs[0] ("a"): require: "a100": machine labels are berth\'s; run the batch with --server (this host has none)',
    );
    const pref = s.batch(
      [
        { name: 'p', prefer: 'a100', argv: ['true'] },
        { name: 'q', prefer: 'a100', argv: ['true'] },
      ],
      'pref.json',
    );
    const ran = await dispatch(pref, '--devices', '0');
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain(
      'berth dispatch: prefer: ignored without --server (2 jobs): the jobs run on this host',
    );
    expect(ran.stderr.match(/prefer:/g)).toHaveLength(1);
  });
});

describe('batch keys', () => {
  it("a typo names the file, the line and jobs[i] and suggests the key: jobs[2]: unknown key 'shel'", async () => {
    s = scratch();
    const file = join(s.dir, 'jobs.yaml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, 'jobs:\n  - name: a\n    shell: "true"\n  - name: b\n    shell: "true"\n  - shel: "true"\n');
    const r = await dispatch(file, '--devices', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file} line 6: jobs[2]: unknown key 'shel' (did you mean 'shell'?)`);
    writeFileSync(file, '- name: a\n  argv: [true]\n  wibble: 1\n');
    expect((await dispatch(file, '--devices', '0')).stderr).toContain(
      'line 3: jobs[0] ("a"): unknown key \'wibble\' (known keys: name, devices, resources, argv, shell,',
    );
  });

  it('the old label: still names the job, with one note saying to write name:', async () => {
    s = scratch();
    const file = s.batch([
      { label: 'old', argv: ['true'] },
      { label: 'older', argv: ['true'] },
    ]);
    const r = await dispatch(file, '--devices', '0');
    expect(r.code, r.stderr).toBe(0);
    expect(statuses(r.stdout)).toEqual({ old: 'passed', older: 'passed' });
    expect(r.stderr).toContain(`'label:' is the old name of 'name:' (2 jobs); write 'name:'`);
    expect(r.stderr.match(/'label:'/g)).toHaveLength(1);
    const both = s.batch([{ label: 'x', name: 'y', argv: ['true'] }], 'both.json');
    expect((await dispatch(both, '--devices', '0')).stderr).toContain(
      'jobs[0] ("y"): name/label: give name only (label is its old spelling)',
    );
  });
});
