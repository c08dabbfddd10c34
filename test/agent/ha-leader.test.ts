/**
 * A worker in front of an HA cluster (SPEC S7, issue 20): given several servers it tries them in turn, follows
 * the `leader` trailer of a standby's UNAVAILABLE, and refuses every frame of an older leader epoch than it has
 * seen — a Call from a deposed leader is not run, and a Welcome from one makes it dial again. The servers are
 * test doubles (fake-hub.ts) so that the epochs and refusals are exactly the ones under test.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentOptions, WorkerAgent } from '../../src/agent/agent.js';
import { runBerth } from '../support/cli.js';
import { FakeHub } from '../support/fake-hub.js';
import { closedPort } from '../support/ports.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

interface Line {
  level: number;
  msg: string;
  epoch?: number;
  newestEpoch?: number;
  frame?: string;
}

/** An agent dialling `server`, its log lines gathered. */
function agentOn(server: string, extra: Partial<AgentOptions> = {}): { agent: WorkerAgent; lines: Line[] } {
  const lines: Line[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as Line) });
  const agent = new WorkerAgent(
    {
      server,
      name: 'w1',
      labels: [],
      inventory: { cpus: 1, gpuIds: [] },
      maxParallel: 0,
      graceMs: 100,
      backoff: { baseMs: 20, capMs: 100 },
      ...extra,
    },
    log,
  );
  open.push(() => agent.stop());
  agent.start();
  return { agent, lines };
}

async function hub(): Promise<{ hub: FakeHub; address: string }> {
  const h = new FakeHub();
  const address = await h.start();
  open.push(() => h.stop());
  return { hub: h, address };
}

const welcome = { $case: 'welcome' as const, value: { serverVersion: 't', heartbeatMs: 1000, calls: [] } };
const call = (callId: string) => ({
  $case: 'call' as const,
  value: {
    callId,
    runId: 'r1',
    flow: 'f',
    node: 'n',
    allocation: { cpus: 1, gpuIds: [], env: {}, resources: {} },
    payload: { $case: 'command' as const, value: { argv: ['true'], env: {}, cwd: '' } },
    timeoutMs: 0,
    disconnectGraceMs: 0,
  },
});

describe('a worker given several servers', () => {
  it('skips an unreachable address, follows the standby to the leader it names, and attaches there', async () => {
    const leader = await hub();
    const standby = await hub();
    standby.hub.standby = {
      details: `standby of cluster c1: the leader is at ${leader.address}`,
      leader: leader.address,
    };
    // the leader is not in the list: only the standby's trailer can lead there
    const { agent } = agentOn(`127.0.0.1:${await closedPort()},${standby.address}`);
    const conn = await leader.hub.connection(0);
    expect((await conn.waitFor('hello')).name).toBe('w1');
    conn.send(welcome, 4);
    await until(() => agent.status().attached);
    expect(agent.status()).toMatchObject({ server: leader.address, epoch: 4 });
    expect(standby.hub.connections.length).toBeGreaterThanOrEqual(1);
  });

  it('after its leader is lost, tries the next address and attaches to the new leader', async () => {
    const a = await hub();
    const b = await hub();
    const { agent } = agentOn(`${a.address},${b.address}`);
    (await a.hub.connection(0)).send(welcome, 3);
    await until(() => agent.status().attached);
    a.hub.stop(); // the leader dies; b takes over with a newer epoch
    const conn = await b.hub.connection(0);
    expect((await conn.waitFor('hello')).name).toBe('w1');
    conn.send(welcome, 9);
    await until(() => agent.status().attached && agent.status().server === b.address);
    expect(agent.status().epoch).toBe(9);
  });
});

describe('a DNS name with several records', () => {
  it('is dialled record by record: past a standby that knows no leader yet, to the leader', async () => {
    const standby = new FakeHub();
    const port = Number((await standby.start()).split(':')[1]);
    open.push(() => standby.stop());
    standby.standby = { details: 'standby of cluster c1: no leader elected yet' };
    const leader = new FakeHub();
    await leader.start(port, '127.0.0.2'); // the same port on another loopback address: a second record
    open.push(() => leader.stop());
    const asked: string[] = [];
    const lookupAll = async (host: string) => {
      asked.push(host);
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '127.0.0.2', family: 4 },
      ];
    };
    const { agent } = agentOn(`berth.cluster.test:${port}`, { lookupAll });
    (await leader.connection(0)).send(welcome, 2);
    await until(() => agent.status().attached);
    expect(agent.status().server).toBe(`127.0.0.2:${port}`);
    expect(standby.connections.length).toBeGreaterThanOrEqual(1);
    expect(asked[0]).toBe('berth.cluster.test');
  });
});

describe('a bad --server list', () => {
  it('berth worker and berth status refuse a list with a bad entry, naming --server and the value (exit 2)', async () => {
    const w = await runBerth(['worker', '--server', '127.0.0.1:1,nonsense']);
    expect(w.code).toBe(2);
    expect(w.stderr).toContain('--server: expected host:port, or several comma-separated');
    expect(w.stderr).toContain('"127.0.0.1:1,nonsense"');
    const s = await runBerth(['status', '--server', ' , ']);
    expect(s.code).toBe(2);
    expect(s.stderr).toContain('--server: expected host:port, or several comma-separated (got " , ")');
  });
});

describe('epochs (SPEC S7)', () => {
  it('a Call of an older epoch is ignored with a warning naming both epochs; one of the current epoch runs', async () => {
    const h = await hub();
    const { agent, lines } = agentOn(h.address);
    const conn = await h.hub.connection(0);
    conn.send(welcome, 7);
    await until(() => agent.status().attached);
    conn.send(call('old:f.n'), 6);
    conn.send(call('new:f.n'), 7);
    await conn.waitFor('result', (r) => r.callId === 'new:f.n');
    expect(conn.of('old:f.n')).toEqual([]);
    const warned = lines.find((l) => l.frame === 'call' && l.epoch === 6);
    expect(warned).toMatchObject({ level: 40, newestEpoch: 7 });
    expect(warned?.msg).toContain('epoch 6');
    expect(warned?.msg).toContain('epoch 7');
  });

  it('a Welcome of an older epoch than seen drops that stream and the agent dials again', async () => {
    const newer = await hub();
    const deposed = await hub();
    const { agent, lines } = agentOn(`${newer.address},${deposed.address}`);
    (await newer.hub.connection(0)).send(welcome, 12);
    await until(() => agent.status().attached);
    newer.hub.connections[0].call.emit('error', { code: 14, details: 'link cut', message: 'link cut' });
    // the next address is a deposed leader still welcoming with its old epoch: refused, stream dropped
    const stale = await deposed.hub.connection(0);
    stale.send(welcome, 11);
    await until(() => stale.closed);
    expect(lines.some((l) => l.frame === 'welcome' && l.epoch === 11 && l.newestEpoch === 12)).toBe(true);
    const back = await newer.hub.connection(1);
    back.send(welcome, 12);
    await until(() => agent.status().attached);
    expect(agent.status()).toMatchObject({ server: newer.address, epoch: 12, attaches: 2 });
  });
});
