/**
 * Clients and workers find the leader of an HA cluster (SPEC S7, issue 20 item 3), through real `berth serve
 * --store etcd://…` processes, a real etcd and real `berth worker` agents: given addresses whose first is
 * unreachable and whose second is a standby (the leader not listed at all), the worker attaches to the leader
 * the standby names, and `berth status`, `berth dispatch`, `berth drain` and the TypeScript client reach it the same way; after the
 * leader's SIGKILL the worker follows to the new leader with its running call, which the caller follows to its end.
 */
import { credentials } from '@grpc/grpc-js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { BerthClient } from '../../src/client/index.js';
import { finished, runBerth, spawnBerth } from '../support/cli.js';
import { etcdSuite, member } from '../support/cluster.js';
import { closedPort } from '../support/ports.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const { describeEtcd, etcd, cleanup: open, clusterName } = etcdSuite('clients-follow-leader.test.ts');

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  open.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Each member: one core, no GPU, info logs (the tests read its log lines). */
const ONE_CPU = ['--cpus', '1', '--gpus', '', '--log-level', 'info'];

/** A leader and a standby of a fresh cluster, both ended after the test. */
async function cluster() {
  const name = clusterName();
  const leader = await member(etcd().endpoint, name, open, ONE_CPU);
  open.push(() => leader.kill());
  const standby = await member(etcd().endpoint, name, open, ONE_CPU);
  open.push(() => standby.kill());
  expect(leader.log()).toContain('"msg":"berth serving"');
  expect(standby.log()).toContain('"msg":"berth standing by"');
  const client = new PlacementServiceClient(leader.address, credentials.createInsecure());
  open.push(() => client.close());
  return { leader, standby, client };
}

/** `berth worker --server <servers>` named w1, labelled w; SIGKILLed after the test. */
function worker(servers: string) {
  const child = spawnBerth([
    'worker',
    '--server',
    servers,
    '--name',
    'w1',
    '--labels',
    'w',
    '--cpus',
    '2',
    '--gpus',
    '',
    '--state-dir',
    tempDir('berth-w-'),
  ]);
  const done = finished(child);
  open.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await done;
  });
  return { child, done };
}

const attached = async (client: PlacementServiceClient) =>
  (await snapshot(client)).machines.find((m) => m.name === 'w1')?.state === 1;

describeEtcd('clients and workers find the leader (SPEC S7)', () => {
  it('an unreachable address and a standby first: the worker, berth status, the TypeScript client, berth ' +
    'dispatch, berth history and berth drain all reach the leader the standby names', async () => {
    const { leader, standby, client } = await cluster();
    const servers = `127.0.0.1:${await closedPort()},${standby.address}`; // the leader is not listed
    worker(servers);
    await until(() => attached(client), 30_000);

    const st = await runBerth(['status', '--server', servers, '--json']);
    expect(st.code).toBe(0);
    expect((JSON.parse(st.stdout) as { machines: Array<{ name: string }> }).machines.map((m) => m.name)).toContain(
      'w1',
    );

    const ts = new BerthClient({ address: servers, token: '' });
    open.push(() => ts.close());
    const value = await ts.run({ command: ['sh', '-c', 'echo hi'], label: 'w' });
    expect(value).toEqual({ exit_code: 0 });
    const lease = await ts.acquire({ cpus: 1, label: 'w' });
    expect(lease.grant.machine).toBe('w1');
    await ts.release(lease);

    const batch = join(tempDir('berth-ha-batch-'), 'jobs.yaml');
    writeFileSync(batch, 'jobs:\n  - name: hello\n    argv: [sh, -c, "echo from-the-leader"]\n');
    const dispatched = await runBerth(['dispatch', batch, '--server', servers]);
    expect(dispatched.code, dispatched.stdout + dispatched.stderr).toBe(0);
    expect(dispatched.stdout + dispatched.stderr).toContain('1 passed');

    const hist = await runBerth(['history', '--server', servers, '--kind', 'claim', '--json']);
    expect(hist.code, hist.stderr).toBe(0);
    const entries = (JSON.parse(hist.stdout) as { entries: Array<{ id: string }> }).entries;
    expect(entries.map((e) => e.id)).toContain(lease.grant.claimId); // the leader's history, through the standby

    const drained = await runBerth(['drain', '--server', standby.address, '--grace', '1']);
    expect(drained.stderr).toBe('');
    expect(drained.stdout).toContain(`drained ${leader.address}:`);
    expect(drained.code).toBe(0);
  }, 60_000);

  it('after the leader is SIGKILLed the worker attaches to the new leader with its running call, and the caller ' +
    'follows the call there to its result, every line once, the command run once', async () => {
    const { leader, standby, client } = await cluster();
    const dir = tempDir('berth-ha-call-');
    const [go, runs] = [join(dir, 'go'), join(dir, 'runs')];
    worker(`${leader.address},${standby.address}`);
    await until(() => attached(client), 30_000);
    const script = `echo ran >> '${runs}'; echo 1; echo 2; while [ ! -f '${go}' ]; do sleep 0.05; done; echo 3; echo 4`;
    const first = run(client, runRequest({ label: 'w', runId: 'ha', argv: ['sh', '-c', script] }));
    await until(() => outputLines(first).length >= 2, 30_000);
    const seen = first.responses.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : [])).at(-1) ?? 0;

    await leader.kill();
    await first.done;
    writeFileSync(go, ''); // lines 3 and 4 come while the worker has no leader: it keeps them
    const next = new PlacementServiceClient(standby.address, credentials.createInsecure());
    open.push(() => next.close());
    await until(() => attached(next).catch(() => false), 30_000);
    const again = await run(next, { ...runRequest({}), follow: { callId: 'ha:flow.node', afterSeq: seen } }).done;
    expect(again.error).toBeNull();
    expect([...outputLines(first), ...outputLines(again)].map((l) => l.line)).toEqual(['1', '2', '3', '4']);
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(readFileSync(runs, 'utf8')).toBe('ran\n');
  }, 60_000);
});
