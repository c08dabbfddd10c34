import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { FakeHub } from '../support/fake-hub.js';
import { until } from '../support/until.js';
import { processAlive } from '../support/process-groups.js';

const opened: Array<{ close(): Promise<void> | void }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function setup(extra: { token?: string } = {}) {
  const hub = new FakeHub();
  const address = await hub.start();
  opened.push({ close: () => hub.stop() });
  const agent = new WorkerAgent(
    {
      server: address,
      name: 'gpu1',
      labels: ['gpu'],
      inventory: { cpus: 4, gpuIds: [0, 1], ramMb: 1024 },
      maxParallel: 2,
      graceMs: 300,
      backoff: { baseMs: 50, capMs: 200 },
      ...extra,
    },
    silentLogger,
  );
  agent.start();
  opened.push({ close: () => agent.stop() });
  const conn = await hub.connection(0);
  await conn.waitFor('hello');
  return { hub, agent, conn };
}

const alloc = (env: Record<string, string> = {}, gpuIds: number[] = []) => ({ cpus: 1, gpuIds, env, resources: {} });

describe('berth worker agent against a test-double server', () => {
  it('attaches with Hello naming its labels, inventory, max_parallel, version and the token', async () => {
    const { hub, conn } = await setup({ token: 's3cret' });
    const hello = await conn.waitFor('hello');
    expect(hello).toMatchObject({
      name: 'gpu1',
      labels: ['gpu'],
      inventory: { cpus: 4, gpuIds: [0, 1], ramMb: 1024 },
      maxParallel: 2,
    });
    expect(hello.version).not.toBe('');
    expect(hub.metadata[0].authorization).toBe('Bearer s3cret');
  });

  it('runs a Python call: events in order, heartbeats at the Welcome interval, then the result', async () => {
    const { conn } = await setup();
    conn.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 50, calls: [] } });
    const source =
      'import time\ndef process(x):\n    report("loss", 1.0)\n    time.sleep(0.3)\n    print("done")\n' +
      '    return {"out": x + 1}\n';
    conn.send({
      $case: 'call',
      value: {
        callId: 'r1:flow.node',
        runId: 'r1',
        flow: 'flow',
        node: 'node',
        allocation: alloc(),
        payload: { $case: 'source', value: { source, kwargs: { x: 1 } } },
        timeoutMs: 0,
        disconnectGraceMs: 0,
      },
    });
    const result = await conn.waitFor('result', (r) => r.callId === 'r1:flow.node');
    expect(result.value).toEqual({ out: 2 });
    const kinds = conn.of('r1:flow.node').map((f) => f.$case);
    expect(kinds.filter((k) => k !== 'heartbeat')).toEqual(['event', 'event', 'result']);
    expect(kinds.filter((k) => k === 'heartbeat').length).toBeGreaterThanOrEqual(2);
  });

  it('a CancelCall stops a running command and answers Failure Cancelled', async () => {
    const { conn } = await setup();
    conn.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 1000, calls: [] } });
    conn.send({
      $case: 'call',
      value: {
        callId: 'r1:f.sleep',
        runId: 'r1',
        flow: 'f',
        node: 'sleep',
        allocation: alloc(),
        payload: { $case: 'command', value: { argv: ['sh', '-c', 'echo $$; sleep 60'], env: {}, cwd: '' } },
        timeoutMs: 0,
        disconnectGraceMs: 0,
      },
    });
    const ev = await conn.waitFor('event', (e) => e.callId === 'r1:f.sleep');
    conn.send({ $case: 'cancel', value: { callId: 'r1:f.sleep', reason: 'cancelled by test' } });
    const failure = await conn.waitFor('failure', (f) => f.callId === 'r1:f.sleep');
    expect(failure).toMatchObject({ type: 'Cancelled', message: 'cancelled by test' });
    expect(ev.kind?.$case === 'log' && !processAlive(Number(ev.kind.value.line))).toBe(true);
  });

  it('a CompileCall answers a SyntaxError without running anything', async () => {
    const { conn } = await setup();
    conn.send({ $case: 'compile', value: { requestId: 'c1', flow: 'f', node: 'n', source: 'def process(:\n' } });
    conn.send({
      $case: 'compile',
      value: { requestId: 'c2', flow: 'f', node: 'n', source: 'def process():\n    return 1\n' },
    });
    expect(await conn.waitFor('compileResult', (c) => c.requestId === 'c1')).toMatchObject({
      ok: false,
      failure: { type: 'SyntaxError' },
    });
    expect(await conn.waitFor('compileResult', (c) => c.requestId === 'c2')).toMatchObject({ ok: true });
  });

  it('when the stream drops its call runs on; the next Hello lists it, and a Welcome without it stops it', async () => {
    const { hub, agent, conn } = await setup();
    conn.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 1000, calls: [] } });
    conn.send({
      $case: 'call',
      value: {
        callId: 'r1:f.sleep',
        runId: 'r1',
        flow: 'f',
        node: 'sleep',
        allocation: alloc(),
        payload: {
          $case: 'command',
          value: { argv: ['sh', '-c', "trap '' TERM; echo $$; sleep 60"], env: {}, cwd: '' },
        },
        timeoutMs: 0,
        disconnectGraceMs: 0,
      },
    });
    const ev = await conn.waitFor('event');
    const pid = ev.kind?.$case === 'log' ? Number(ev.kind.value.line) : -1;
    conn.call.end();
    const second = await hub.connection(1);
    const hello = await second.waitFor('hello');
    expect(processAlive(pid)).toBe(true); // SPEC S1: calls outlive the stream
    expect(hello.heldCalls.map((c) => c.callId)).toEqual(['r1:f.sleep']);
    second.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 1000, calls: [] } });
    await until(() => agent.status().attached);
    await until(() => !processAlive(pid)); // the server no longer knows it: stopped (SIGKILL after the grace)
    expect(agent.status().attaches).toBe(2);
  });

  it('nodes with the same env share one pool; a different env adds one', async () => {
    const { agent, conn } = await setup();
    conn.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 1000, calls: [] } });
    const source = 'def process():\n    return 1\n';
    const call = (id: string, env: Record<string, string>) =>
      conn.send({
        $case: 'call',
        value: {
          callId: id,
          runId: 'r',
          flow: 'f',
          node: id,
          allocation: alloc(env),
          payload: { $case: 'source', value: { source, kwargs: {} } },
          timeoutMs: 0,
          disconnectGraceMs: 0,
        },
      });
    call('r:f.a', { OMP_NUM_THREADS: '1' });
    await conn.waitFor('result', (r) => r.callId === 'r:f.a');
    call('r:f.b', { OMP_NUM_THREADS: '1' });
    await conn.waitFor('result', (r) => r.callId === 'r:f.b');
    expect(agent.status().pools).toBe(1);
    call('r:f.c', { OMP_NUM_THREADS: '2' });
    await conn.waitFor('result', (r) => r.callId === 'r:f.c');
    expect(agent.status().pools).toBe(2);
  });
});
