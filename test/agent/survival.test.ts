/**
 * The agent side of a lost link (SPEC S1, S2; issue 19 items 1 and 8), with a real WorkerAgent and real
 * subprocesses against the test-double server; links are cut with a TCP proxy on loopback. Calls outlive
 * the stream, their events are numbered and kept until acknowledged (in memory, then spilled to the state
 * dir, then paused), resent after a reconnect from where the server is; the disconnect grace bounds how long
 * they run unlinked; stop() says Stopping first; Hello names the agent and its instance.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Event } from '../../generated/ts/berth/v1/calls.js';
import type { Call } from '../../generated/ts/berth/v1/worker.js';
import { type AgentOptions, WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { type FakeConnection, FakeHub } from '../support/fake-hub.js';
import { LinkProxy } from '../support/link-proxy.js';
import { outputLines, run, runRequest } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { processAlive } from '../support/process-groups.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function tempDir(): string {
  const dir = mkdtempSync(join(os.tmpdir(), 'berth-survival-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A FakeHub behind a cuttable link, and a real agent dialing the link. */
async function setup(extra: Partial<AgentOptions> = {}) {
  const hub = new FakeHub();
  const target = await hub.start();
  open.push(() => hub.stop());
  const link = new LinkProxy(target);
  const address = await link.start();
  open.push(() => link.close());
  const agent = startAgent(address, extra);
  const conn = await hub.connection(0);
  await conn.waitFor('hello');
  welcome(conn);
  await until(() => agent.status().attached);
  return { hub, link, agent, conn };
}

function startAgent(address: string, extra: Partial<AgentOptions> = {}): WorkerAgent {
  const agent = new WorkerAgent(
    {
      server: address,
      name: 'w1',
      labels: [],
      inventory: { cpus: 4, gpuIds: [], ramMb: 1024 },
      maxParallel: 0,
      graceMs: 300,
      backoff: { baseMs: 50, capMs: 200 },
      ...extra,
    },
    silentLogger,
  );
  agent.start();
  open.push(() => agent.stop());
  return agent;
}

function welcome(conn: FakeConnection, calls: Array<{ callId: string; seq: number; ended: boolean }> = []): void {
  conn.send({ $case: 'welcome', value: { serverVersion: 't', heartbeatMs: 1000, calls } });
}

function command(callId: string, script: string, disconnectGraceMs = 0): Call {
  return {
    callId,
    runId: 'r1',
    flow: 'f',
    node: callId,
    allocation: { cpus: 1, gpuIds: [], env: {}, resources: {} },
    payload: { $case: 'command', value: { argv: ['sh', '-c', script], env: {}, cwd: '' } },
    timeoutMs: 0,
    disconnectGraceMs,
  };
}

/** The output lines of `events`, in order. */
function lines(events: Event[]): string[] {
  return events.flatMap((e) =>
    e.kind?.$case === 'logs' ? e.kind.value.lines : e.kind?.$case === 'log' ? [e.kind.value.line] : [],
  );
}

/** The pid a call printed first (`echo $$`). */
async function pidOf(conn: FakeConnection, callId: string): Promise<number> {
  const ev = await conn.waitFor('event', (e) => e.callId === callId);
  const pid = Number(lines([ev])[0]);
  open.push(() => {
    try {
      process.kill(pid, 'SIGKILL'); // only if the test failed: nothing may outlive it
    } catch {
      // gone, as it should be
    }
  });
  return pid;
}

describe('calls outlive a lost link (SPEC S1)', () => {
  it('a cut link: the call runs on; after reconnect its events come once, in order, from the acked seq', async () => {
    const { hub, link, agent, conn } = await setup();
    const id = 'r1:f.count';
    conn.send({ $case: 'call', value: command(id, 'for i in $(seq 1 60); do echo $i; sleep 0.03; done') });
    await until(() => conn.events(id).length >= 6);
    const acked = 3;
    conn.ack(id, acked); // the server has 1..3; what it got after that is lost with the link
    await until(() => agent.calls.stats(id)?.ackedSeq === acked);
    link.cut();
    await until(() => !agent.status().attached);
    const cutAt = agent.calls.stats(id)!.lastSeq;
    await until(() => agent.calls.stats(id)!.lastSeq >= cutAt + 5); // it keeps running, unlinked
    link.restore();
    const second = await hub.connection(1);
    const hello = await second.waitFor('hello');
    expect(hello.heldCalls).toHaveLength(1);
    expect(hello.heldCalls[0]).toMatchObject({ callId: id, ended: false });
    expect(hello.heldCalls[0].lastSeq).toBeGreaterThan(cutAt);
    welcome(second, [{ callId: id, seq: acked, ended: false }]);
    const result = await second.waitFor('result', (r) => r.callId === id);
    expect(result.value).toMatchObject({ exit_code: 0 });
    const before = conn.events(id).filter((e) => e.seq <= acked);
    const after = second.events(id);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => acked + 1 + i)); // from acked+1, no gap, no repeat
    const all = lines([...before, ...after]);
    expect(all).toEqual(Array.from({ length: 60 }, (_, i) => String(i + 1)));
    expect(second.of(id).filter((f) => f.$case === 'result')).toHaveLength(1);
    second.ack(id, after.at(-1)!.seq, true);
    await until(() => agent.status().held === 0); // an acknowledged ending forgets the call
  });

  it('the disconnect grace running out stops the call; its WorkerLost ending is delivered on reconnect', async () => {
    const { hub, link, agent, conn } = await setup({ disconnectGraceMs: 300 });
    conn.send({ $case: 'call', value: command('r1:f.short', 'echo $$; sleep 60') });
    conn.send({ $case: 'call', value: command('r1:f.patient', 'echo $$; sleep 60', 60_000) });
    const short = await pidOf(conn, 'r1:f.short');
    const patient = await pidOf(conn, 'r1:f.patient');
    conn.ack('r1:f.short', 1);
    conn.ack('r1:f.patient', 1);
    await until(
      () => agent.calls.stats('r1:f.short')?.ackedSeq === 1 && agent.calls.stats('r1:f.patient')?.ackedSeq === 1,
    );
    link.cut();
    await until(() => !processAlive(short), 10_000); // 300 ms after the cut, then SIGTERM
    // and its ending kept: `running` goes false when the process exits, `ended` once its ending is recorded
    await until(() => agent.calls.held().some((h) => h.callId === 'r1:f.short' && h.ended));
    expect(processAlive(patient)).toBe(true); // its own disconnect_grace_ms is longer: kept
    link.restore();
    const second = await hub.connection(1);
    const hello = await second.waitFor('hello');
    expect(hello.disconnectGraceMs).toBe(300);
    expect(hello.heldCalls, JSON.stringify(hello.heldCalls)).toEqual(
      expect.arrayContaining([
        { callId: 'r1:f.short', lastSeq: 1, ended: true },
        { callId: 'r1:f.patient', lastSeq: 1, ended: false },
      ]),
    );
    welcome(second, [
      { callId: 'r1:f.short', seq: 1, ended: false },
      { callId: 'r1:f.patient', seq: 1, ended: false },
    ]);
    const lost = await second.waitFor('failure', (f) => f.callId === 'r1:f.short');
    expect(lost.type).toBe('WorkerLost');
    expect(lost.message).toContain('disconnect grace');
    expect(second.events('r1:f.short')).toEqual([]); // seq 1 was acknowledged: not sent again
    expect(processAlive(patient)).toBe(true);
  });

  it('a held call the Welcome does not list is stopped without a report, before a new call starts', async () => {
    const { hub, agent, conn } = await setup();
    conn.send({ $case: 'call', value: command('r1:f.gone', "trap '' TERM; echo $$; sleep 60") });
    const pid = await pidOf(conn, 'r1:f.gone');
    conn.call.end();
    const second = await hub.connection(1);
    const hello = await second.waitFor('hello');
    expect(processAlive(pid)).toBe(true); // the call outlived its stream
    expect(hello.heldCalls).toEqual([{ callId: 'r1:f.gone', lastSeq: 1, ended: false }]);
    welcome(second); // the server no longer knows it (it failed meanwhile)
    second.send({ $case: 'call', value: command('r1:f.next', 'echo next') });
    await second.waitFor('result', (r) => r.callId === 'r1:f.next');
    expect(processAlive(pid)).toBe(false); // SIGTERM ignored: SIGKILLed after the grace, before r1:f.next ran
    expect(second.of('r1:f.gone')).toEqual([]); // nothing reported
    expect(agent.status().held).toBe(1); // r1:f.next, until its ending is acknowledged
  });

  it('a call id sent again once its call ended (ending not yet acknowledged) runs again', async () => {
    const { conn } = await setup();
    conn.send({ $case: 'call', value: command('r1:f.again', 'echo ran') });
    await conn.waitFor('result', (r) => r.callId === 'r1:f.again');
    conn.send({ $case: 'call', value: command('r1:f.again', 'echo ran') });
    await until(() => conn.of('r1:f.again').filter((f) => f.$case === 'result').length === 2);
    expect(lines(conn.events('r1:f.again'))).toEqual(['ran', 'ran']);
    expect(conn.events('r1:f.again').map((e) => e.seq)).toEqual([1, 1]); // a new execution numbers from 1
  });

  it('stop() sends Stopping first, then the Failures of its calls, then ends the stream', async () => {
    const { agent, conn } = await setup();
    conn.send({ $case: 'call', value: command('r1:f.long', 'echo $$; sleep 60') });
    const pid = await pidOf(conn, 'r1:f.long');
    await agent.stop('SIGTERM');
    expect(processAlive(pid)).toBe(false);
    const kinds = conn.frames.filter((f) => f.$case !== 'heartbeat').map((f) => f.$case);
    expect(kinds.indexOf('stopping')).toBeGreaterThan(0);
    expect(kinds.indexOf('stopping')).toBeLessThan(kinds.indexOf('failure'));
    expect(await conn.waitFor('stopping')).toEqual({ reason: 'SIGTERM' });
    expect(await conn.waitFor('failure')).toMatchObject({
      callId: 'r1:f.long',
      type: 'WorkerLost',
      message: 'worker w1 stopping (SIGTERM)',
    });
    await until(() => conn.closed);
  });
});

describe('the outbox (SPEC S1)', () => {
  it('spills past its memory bound to the state dir, pauses the node at its cap, and loses nothing', async () => {
    const stateDir = tempDir();
    const bounds = { memoryBytes: 16 << 10, spillBytes: 128 << 10 };
    const { agent, conn } = await setup({ stateDir, outbox: bounds });
    const id = 'r1:f.chatty';
    const N = 100_000;
    conn.send({ $case: 'call', value: command(id, `seq 1 ${N}`) }); // no Ack: everything stays unacknowledged
    const atCap = () => agent.calls.stats(id)!.spilledBytes >= bounds.spillBytes;
    await until(() => agent.calls.stats(id)?.paused === true && atCap(), 20_000);
    const s = agent.calls.stats(id)!;
    expect(s.memoryBytes).toBeGreaterThanOrEqual(bounds.memoryBytes - (8 << 10)); // full, to within one batch
    expect(s.memoryBytes).toBeLessThan(bounds.memoryBytes + (64 << 10)); // one pipe read past the bound at most
    expect(s.spilledBytes).toBeGreaterThanOrEqual(bounds.spillBytes);
    expect(s.spilledBytes).toBeLessThan(bounds.spillBytes + (128 << 10));
    const files = readdirSync(stateDir, { recursive: true }).map(String);
    expect(files.some((f) => /outbox\/call-\d+\/segment-\d+$/.test(f))).toBe(true);
    // paused, not dropped: past the lines already read (one batch, flushed within ms), nothing more comes
    await new Promise((r) => setTimeout(r, 50));
    const pausedAt = agent.calls.stats(id)!.lastSeq;
    expect(pausedAt - s.lastSeq).toBeLessThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(agent.calls.stats(id)!.lastSeq).toBe(pausedAt);
    expect(lines(conn.events(id)).length).toBeLessThan(N);
    // acknowledging lets it go on; every line arrives once, in order
    await until(
      () => {
        const evs = conn.events(id);
        if (evs.length) conn.ack(id, evs.at(-1)!.seq);
        return conn.frames.some((f) => f.$case === 'result' && f.value.callId === id);
      },
      60_000,
      20,
    );
    const all = lines(conn.events(id));
    expect(all).toHaveLength(N);
    expect(all.every((l, i) => l === String(i + 1))).toBe(true);
    const last = conn.events(id).at(-1)!.seq;
    conn.ack(id, last, true);
    await until(() => agent.status().held === 0);
    expect(
      readdirSync(stateDir, { recursive: true })
        .map(String)
        .filter((f) => f.includes('segment-')),
    ).toEqual([]);
  }, 90_000);
});

describe('forgetting what the server has (SPEC S1)', () => {
  it('a finished call is forgotten once the server has its ending, through the real server', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const agent = new WorkerAgent(
      {
        server: s.address,
        name: 'w1',
        labels: ['w'],
        inventory: { cpus: 2, gpuIds: [] },
        maxParallel: 0,
        graceMs: 300,
      },
      silentLogger,
    );
    const attached = agent.nextAttach();
    agent.start();
    open.push(() => agent.stop());
    await attached;
    for (const n of [1, 2]) {
      const o = await run(s.placement, runRequest({ label: 'w', node: `n${n}`, argv: ['seq', '1', '3000'] })).done;
      expect(o.error).toBeNull();
      expect(outputLines(o)).toHaveLength(3000);
    }
    // acknowledged (or, from a server older than the survival rules, noticed to acknowledge nothing): dropped
    await until(() => agent.status().held === 0, 15_000);
  });
});

describe('agent identity (SPEC S2)', () => {
  it('Hello carries agent_id <host>:<state dir> and a new instance_id at each start', async () => {
    const stateDir = tempDir();
    const hub = new FakeHub();
    const address = await hub.start();
    open.push(() => hub.stop());
    const first = startAgent(address, { stateDir });
    const h1 = await (await hub.connection(0)).waitFor('hello');
    await first.stop();
    startAgent(address, { stateDir });
    const h2 = await (await hub.connection(1)).waitFor('hello');
    expect(h1.agentId).toBe(`${os.hostname()}:${stateDir}`);
    expect(h2.agentId).toBe(h1.agentId);
    expect(h1.instanceId).not.toBe('');
    expect(h2.instanceId).not.toBe(h1.instanceId);
    expect(h1.disconnectGraceMs).toBe(120_000);
    expect(h1.heldCalls).toEqual([]);
    startAgent(address, { name: 'w2' });
    expect((await (await hub.connection(2)).waitFor('hello')).agentId).toBe(`${os.hostname()}:w2`);
  });
});
