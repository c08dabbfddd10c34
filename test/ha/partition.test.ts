/**
 * Fencing under a cut link (issue 20 target, SPEC S7), through real `berth serve --store etcd://…` processes, a real
 * etcd and a real `berth worker`: the leader dials etcd through a TCP proxy (test/support/link-proxy.ts) that is
 * cut while it keeps its link to the worker. It stops acting at its own deadline — before the standby leads — and
 * exits 3; nothing asked of it once it said so is granted or started; none of what it granted or started after the
 * cut lands in etcd; the worker follows the new leader and runs what that one sends.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { spawnBerth } from '../support/cli.js';
import { claim } from '../support/claims.js';
import { etcdSuite, serving } from '../support/cluster.js';
import { LinkProxy } from '../support/link-proxy.js';
import { run, runRequest, terminal, type RunHandle } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const { describeEtcd, cleanup, etcd, pair } = etcdSuite('partition.test.ts');

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Log time (ms since the Unix epoch) of the first JSON line of `log` holding `event`, or undefined. */
function loggedAt(log: string, event: string): number | undefined {
  const m = new RegExp(`"time":(\\d+)[^\\n]*"event":"${event}"`).exec(log);
  return m ? Number(m[1]) : undefined;
}

describeEtcd('a leader cut off from etcd (SPEC S7)', () => {
  it('stops acting at its deadline before the standby leads: nothing asked of it afterwards is granted or started, ' +
    'nothing it did after the cut lands in etcd, and the worker runs the new leader calls', async () => {
    const proxy = new LinkProxy(etcd().endpoint);
    cleanup.push(() => proxy.close());
    const via = await proxy.start();
    const { name, a, b } = await pair(['--log-level', 'info'], via);
    const marks = tempDir('berth-marks-');
    const w = spawnBerth([
      'worker',
      '--server',
      `${a.address},${b.address}`,
      '--name',
      'w1',
      '--labels',
      'w',
      '--cpus',
      '4',
      '--gpus',
      '',
      '--state-dir',
      tempDir('berth-w-'),
    ]);
    cleanup.push(async () => {
      if (w.exitCode === null && w.signalCode === null) {
        const gone = new Promise((r) => w.once('exit', r));
        w.kill('SIGKILL');
        await gone;
      }
    });
    await until(async () => (await snapshot(a.client)).machines.find((m) => m.name === 'w1')?.state === 1, 30_000);
    // Each command leaves a marker named after its call: which ran at all.
    const cmd = (id: string) => ['sh', '-c', `touch '${join(marks, id)}'; sleep 0.2`];
    const onA = (id: string) => run(a.client, runRequest({ label: 'w', runId: id, argv: cmd(id) }));

    proxy.cut();
    // Ask the cut-off leader for claims and calls until it is gone, noting which were asked after it said it stopped.
    const asked: Array<{ id: string; afterDeposed: boolean; grant?: string; started?: boolean; h: RunHandle }> = [];
    const ask = (afterDeposed: boolean) => {
      const c = claim(a.client, { cpus: 1, label: 'w' });
      const id = `cut${asked.length}`;
      const entry = { id, afterDeposed, grant: undefined as string | undefined, h: onA(id) };
      asked.push(entry);
      void c.granted.then(
        (g) => (entry.grant = g.claimId),
        () => undefined,
      );
      cleanup.push(() => c.call.cancel());
    };
    // The moment its log says it stopped, a burst of asks goes out: a leader that halts within milliseconds still
    // gets asked after it said so (polling alone may never land in that window).
    let said = false;
    const onLog = () => {
      if (said || !a.log().includes('"event":"cluster_deposed"')) return;
      said = true;
      for (let k = 0; k < 5; k++) ask(true);
    };
    a.child.stderr?.on('data', onLog);
    const aGone = a.exited.then(() => true);
    while (!(await Promise.race([aGone, new Promise<false>((r) => setTimeout(() => r(false), 20))]))) {
      ask(said || a.log().includes('"event":"cluster_deposed"'));
    }
    a.child.stderr?.off('data', onLog);
    expect(await a.exited).toBe(3);
    expect(a.log()).toMatch(/"event":"cluster_deposed".*no keep-alive succeeded/);
    const outs = await Promise.all(asked.map((x) => x.h.done));
    for (const [i, o] of outs.entries()) asked[i].started = o.responses.some((r) => r.kind?.$case === 'started');
    const late = asked.filter((x) => x.afterDeposed);
    const early = asked.filter((x) => !x.afterDeposed);
    console.log(
      `asked the cut-off leader ${asked.length}x: before it said it stopped ${early.length} (granted ` +
        `${early.filter((x) => x.grant).length}, started ${early.filter((x) => x.started).length}), after ${late.length}`,
    );
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((x) => x.grant || x.started || readdirSync(marks).includes(x.id))).toEqual([]);

    await serving(b);
    const deposedAt = loggedAt(a.log(), 'cluster_deposed');
    const electedAt = loggedAt(b.log(), 'cluster_elected');
    expect(deposedAt).toBeLessThan(electedAt!);
    // None of what the cut-off leader granted or started after the cut is in etcd (its writes could not land then,
    // and etcd refuses them under its epoch since).
    proxy.restore();
    const all = await etcd().client.getAll().prefix(`/berth/${name}/`).strings();
    const stored = JSON.stringify(all);
    const didAfterCut = asked.flatMap((x) => [...(x.grant ? [x.grant] : []), ...(x.started ? [x.id] : [])]);
    expect(didAfterCut.filter((id) => stored.includes(id))).toEqual([]);

    // The worker follows the new leader and runs its calls.
    await until(async () => (await snapshot(b.client)).machines.find((m) => m.name === 'w1')?.state === 1, 30_000);
    const onB = await run(b.client, runRequest({ label: 'w', runId: 'onB', argv: cmd('onB') })).done;
    expect(terminal(onB)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(readdirSync(marks)).toContain('onB');
  }, 90_000);
});
