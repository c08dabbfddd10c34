/**
 * Takeover in a cluster of `berth serve --store etcd://…` (issue 20, SPEC S7), real server processes, a real etcd
 * and real `berth worker` agents behind a TCP proxy the test points at the leader: after the leader's SIGKILL the
 * standby takes over — a held claim resumes there with the same allocation, a call running on an agent ends with
 * its result — and, with most known workers missing, holds them past --restart-hold instead of giving them up.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { spawnBerth } from '../support/cli.js';
import { claim, resumeClaim } from '../support/claims.js';
import { etcdSuite, serving } from '../support/cluster.js';
import { LinkProxy } from '../support/link-proxy.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const { describeEtcd, cleanup, pair } = etcdSuite('takeover.test.ts');

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A real `berth worker` dialling `address` (a proxy the test points at the leader). */
function agent(address: string, name: string): ChildProcess {
  const child = spawnBerth([
    'worker',
    '--server',
    address,
    '--name',
    name,
    '--labels',
    'w',
    '--cpus',
    '2',
    '--gpus',
    '',
    '--state-dir',
    tempDir('berth-w-'),
  ]);
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
  });
  return child;
}

describeEtcd('berth serve --store etcd (SPEC S7)', () => {
  it('leader SIGKILL: the standby takes over; a held claim resumes there with the same allocation and a call ' +
    'running on a real agent ends with its result', async () => {
    const { a, b } = await pair(['--claim-hold', '30', '--restart-hold', '30']);
    const proxy = new LinkProxy(a.address);
    cleanup.push(() => proxy.close());
    const via = await proxy.start();
    agent(via, 'w1');
    await until(async () => (await snapshot(a.client)).machines.some((m) => m.name === 'w1'));
    const c = claim(a.client, { cpus: 1, gpus: 2, holdMs: 30_000 });
    const g = await c.granted;
    const go = join(tempDir('berth-go-'), 'go');
    const script = `echo one; while [ ! -f '${go}' ]; do sleep 0.05; done; echo two`;
    const first = run(a.client, runRequest({ label: 'w', runId: 'ha', argv: ['sh', '-c', script] }));
    await until(() => outputLines(first).length >= 1);

    await a.kill();
    proxy.retarget(b.address);
    await serving(b);
    writeFileSync(go, '');
    const back = resumeClaim(b.client, g.claimId, g.resumeToken);
    expect(await back.granted).toMatchObject({ claimId: g.claimId, allocation: g.allocation, resumed: true });
    await until(async () => (await snapshot(b.client)).machines.find((m) => m.name === 'w1')?.state === 1, 20_000);
    const again = await run(b.client, { ...runRequest({}), follow: { callId: 'ha:flow.node', afterSeq: 0 } }).done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(again).map((l) => l.line)).toContain('two');
    await back.release();
  }, 40_000);

  it('no mass expiry: when both workers the store knows are missing after a takeover, the new leader holds them past ' +
    '--restart-hold, saying so; once one is back, the other is given up', async () => {
    const { a, b } = await pair(['--restart-hold', '2']);
    const proxy = new LinkProxy(a.address);
    cleanup.push(() => proxy.close());
    const via = await proxy.start();
    const w1 = agent(via, 'w1');
    const w2 = agent(via, 'w2');
    await until(async () => (await snapshot(a.client)).machines.filter((m) => m.remote).length === 2);
    for (const w of [w1, w2]) w.kill('SIGKILL');
    await a.kill();
    await serving(b);
    const took = Date.now();
    await until(() => b.log().includes('"event":"takeover_holding"'), 10_000);
    expect(b.log()).toContain('2 of 2 workers missing after the takeover');
    await until(() => Date.now() - took > 3000, 5000, 100); // past the 2 s restart hold
    expect((await snapshot(b.client)).machines.map((m) => m.name).sort()).toEqual(['engine', 'w1', 'w2']);
    proxy.retarget(b.address);
    agent(via, 'w1');
    await until(async () => (await snapshot(b.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    await until(async () => !(await snapshot(b.client)).machines.some((m) => m.name === 'w2'), 10_000);
  }, 40_000);
});
