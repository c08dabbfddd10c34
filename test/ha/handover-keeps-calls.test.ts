/**
 * A SIGTERM hand-over is not the caller leaving (SPEC S5, S7): between two `berth serve --store etcd://… --cluster`
 * members, a Run on a real `berth worker` whose caller asked no grace (disconnect_grace_ms 0, the default) outlives
 * the old leader's halt — its stream cut by that halt neither stops nor fails the call, nor reaches etcd as
 * cancelled — and, followed again by call id on the new leader, ends with its result. Real etcd and processes.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { spawnBerth } from '../support/cli.js';
import { etcdSuite, member, serving } from '../support/cluster.js';
import { LinkProxy } from '../support/link-proxy.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const { describeEtcd, cleanup, pair, etcd } = etcdSuite('handover-keeps-calls.test.ts');

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A real `berth worker` that knows both members (it follows the leader). */
function agent(servers: string, name: string): ChildProcess {
  const child = spawnBerth([
    'worker',
    '--server',
    servers,
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

describeEtcd('a SIGTERM hand-over keeps a call whose caller asked no grace (SPEC S5, S7)', () => {
  it('the Run cut by the old leader halting is not cancelled: followed again by id on the new leader, it ends ' +
    'with its result', async () => {
    const { a, b } = await pair(['--restart-hold', '30']);
    agent(`${a.address},${b.address}`, 'w1');
    await until(async () => (await snapshot(a.client)).machines.some((m) => m.name === 'w1'));
    const go = join(tempDir('berth-go-'), 'go');
    const script = `echo one; while [ ! -f '${go}' ]; do sleep 0.05; done; echo two`;
    // disconnect_grace_ms 0 (the default): the caller leaving would cancel it, the leader stopping must not
    const first = run(a.client, runRequest({ label: 'w', runId: 'ho', argv: ['sh', '-c', script] }));
    await until(() => outputLines(first).length >= 1);

    a.child.kill('SIGTERM'); // hand-over: the old leader resigns at once, the work keeps running
    expect((await first.done).error?.code).toBe(status.UNAVAILABLE);
    expect(await a.exited).toBe(0);
    await serving(b);
    // followed again at once, as a caller retrying does: before the worker is back on the new leader
    const following = run(b.client, { ...runRequest({}), follow: { callId: 'ho:flow.node', afterSeq: 0 } });
    await until(async () => (await snapshot(b.client)).machines.find((m) => m.name === 'w1')?.state === 1, 20_000);
    writeFileSync(go, '');
    const again = await following.done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(again).map((l) => l.line)).toContain('two');
  }, 40_000);

  it('a call re-bound by a takeover and followed again on the new leader is not written to etcd as cancelled when ' +
    'that leader hands over on SIGTERM: the next leader has it running, and it ends with its result', async () => {
    const flags = ['--restart-hold', '30'];
    const { name, a, b } = await pair(flags);
    const proxy = new LinkProxy(a.address); // the worker dials the proxy, which the test points at the leader
    cleanup.push(() => proxy.close());
    agent(await proxy.start(), 'w1');
    await until(async () => (await snapshot(a.client)).machines.some((m) => m.name === 'w1'));
    const go = join(tempDir('berth-go-'), 'go');
    const script = `echo one; while [ ! -f '${go}' ]; do sleep 0.05; done; echo two`;
    const first = run(a.client, runRequest({ label: 'w', runId: 'rb', argv: ['sh', '-c', script] }));
    await until(() => outputLines(first).length >= 1);

    await a.kill(); // a crash: b takes over and re-binds the call from etcd
    proxy.retarget(b.address);
    await serving(b);
    await until(async () => (await snapshot(b.client)).machines.find((m) => m.name === 'w1')?.state === 1, 20_000);
    const follow = { callId: 'rb:flow.node', afterSeq: 0 };
    const second = run(b.client, { ...runRequest({}), follow }); // a follow: no grace of its own
    await until(() => second.responses.some((r) => r.kind?.$case === 'started'));
    const c = await member(etcd().endpoint, name, cleanup, flags); // a standby again
    proxy.retarget(c.address);
    b.child.kill('SIGTERM'); // hand-over to c
    expect((await second.done).error?.code).toBe(status.UNAVAILABLE);
    expect(await b.exited).toBe(0);
    await serving(c);
    await until(async () => (await snapshot(c.client)).machines.find((m) => m.name === 'w1')?.state === 1, 20_000);
    writeFileSync(go, '');
    const again = await run(c.client, { ...runRequest({}), follow }).done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(again).map((l) => l.line)).toContain('two');
  }, 60_000);
});
