/**
 * WorkerStream lifecycle: keepalive silence, drain, token (SPEC W3, R2, R3); the `berth worker` CLI.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { silentLogger } from '../../src/log/logger.js';
import { BerthServer } from '../../src/server/server.js';
import { runBerth } from '../support/cli.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, tempStateDir } from '../support/server.js';
import { TestWorker } from '../support/test-worker.js';
import { KEEPER_HEADER } from '../../src/workers/keeper-process.js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { credentials } from '@grpc/grpc-js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('WorkerStream lifecycle', () => {
  it('a worker silent past the keepalive is dropped: its call fails with "went away" and its books leave', async () => {
    const server = new BerthServer(
      resolveServeOptions({ listen: '127.0.0.1:0', grace: 1, stateDir: tempStateDir() }, {}),
      { cpus: 1, gpuIds: [] },
      { heartbeatMs: 100 },
    );
    await server.start();
    open.push(() => server.stop(500));
    const client = new PlacementServiceClient(server.address, credentials.createInsecure());
    open.push(() => client.close());
    const w = await TestWorker.attach(server.address, { name: 'quiet', labels: ['q'] });
    open.push(() => w.close());
    expect((await w.next('welcome')).heartbeatMs).toBe(100);
    const r = run(client, runRequest({ label: 'q' }));
    await w.next('call');
    const o = await r.done; // the double never heartbeats: dropped after 3 heartbeats and a second
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toContain('went away');
    expect(server.context.placer.snapshot().machines.map((m) => m.name)).not.toContain('quiet');
  });

  it('on drain the worker is sent Drain and its call in flight may still finish within the grace', async () => {
    const s = await startServer({ cpus: 1 });
    const w = await TestWorker.attach(s.address, { name: 'gpu1', labels: ['gpu'] });
    open.push(() => w.close());
    const r = run(s.placement, runRequest({ label: 'gpu' }));
    const call = await w.next('call');
    const stopped = s.close(5000);
    const drain = await w.next('drain');
    expect(drain.graceMs).toBeGreaterThan(0);
    w.result(call.callId, 'finished while draining');
    const o = await r.done;
    expect(terminal(o)?.value).toMatchObject({ value: 'finished while draining' });
    await stopped;
  });

  it('with a token the agent attaches when it has it, and a worker without it is UNAUTHENTICATED', async () => {
    const s = await startServer({ cpus: 1, flags: { token: 's3cret' } });
    open.push(() => s.close());
    const bare = new TestWorker(s.address, { name: 'anon' });
    open.push(() => bare.close());
    expect(((await bare.waitEnded()) as ServiceError).code).toBe(status.UNAUTHENTICATED);
    const agent = new WorkerAgent(
      {
        server: s.address,
        name: 'w1',
        labels: [],
        inventory: { cpus: 1, gpuIds: [] },
        maxParallel: 0,
        graceMs: 1000,
        token: 's3cret',
      },
      silentLogger,
    );
    const attached = agent.nextAttach();
    agent.start();
    open.push(() => agent.stop());
    await attached;
    expect(s.server.context.placer.snapshot().machines.map((m) => m.name)).toContain('w1');
  });
});

describe('bad worker frames', () => {
  it(
    'an event without a call id ends the stream with ' + 'INVALID_ARGUMENT naming the field, and the worker leaves',
    async () => {
      const s = await startServer({ cpus: 1 });
      open.push(() => s.close());
      const w = await TestWorker.attach(s.address, { name: 'sloppy' });
      open.push(() => w.close());
      w.send({
        $case: 'event',
        value: { callId: '', kind: { $case: 'metric', value: { name: 'loss', value: 1 } }, seq: 0 },
      });
      const ended = (await w.waitEnded()) as ServiceError;
      expect(ended.code).toBe(status.INVALID_ARGUMENT);
      expect(ended.details).toContain('event.call_id');
      expect(s.server.context.placer.snapshot().machines.map((m) => m.name)).not.toContain('sloppy');
    },
  );
});

describe('names', () => {
  it("a worker may not take the engine's name", async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const w = new TestWorker(s.address, { name: 'engine' });
    open.push(() => w.close());
    const ended = (await w.waitEnded()) as ServiceError;
    expect(ended.code).toBe(status.INVALID_ARGUMENT);
    expect(ended.details).toContain('hello.name');
  });
});

describe('the engine keeper (issue 19 item 5)', () => {
  it(
    "only the keeper's secret takes the engine's name; the keeper joins no books and runs engine-host commands, " +
      'Python source stays in-process',
    async () => {
      const s = await startServer({ cpus: 2, flags: { engineKeeper: 'on' } });
      open.push(() => s.close());
      const secret = s.server.context.hub.o.keeper!.secret;
      const wrong = new TestWorker(s.address, { name: 'engine', metadata: { [KEEPER_HEADER]: `${secret}x` } });
      open.push(() => wrong.close());
      expect(((await wrong.waitEnded()) as ServiceError).details).toContain("'engine' is the engine's name");
      const other = new TestWorker(s.address, { name: 'w9', metadata: { [KEEPER_HEADER]: secret } });
      open.push(() => other.close());
      expect(((await other.waitEnded()) as ServiceError).details).toContain("attaches as 'engine'");
      const keeper = await TestWorker.attach(s.address, {
        name: 'engine',
        agentId: 'test:keeper',
        instanceId: 'i1',
        metadata: { [KEEPER_HEADER]: secret },
      });
      open.push(() => keeper.close());
      expect(s.server.context.placer.snapshot().machines.map((m) => m.name)).toEqual(['engine']);
      const r = run(s.placement, runRequest({ runId: 'kc', argv: ['true'] }));
      const call = await keeper.next('call');
      expect(call.callId).toBe('kc:flow.node');
      keeper.send({ $case: 'result', value: { callId: call.callId, value: { exit_code: 0 } } });
      expect(terminal(await r.done)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
      const py = await run(s.placement, runRequest({ runId: 'kp' })).done; // in-process: the double never sees it
      expect(terminal(py)?.$case).toBe('result');
      expect(keeper.frames.filter((f) => f.$case === 'call')).toHaveLength(1);
    },
  );
});

describe('berth worker CLI', () => {
  it('a worker whose token the server refuses exits 1 saying so', async () => {
    const s = await startServer({ cpus: 1, flags: { token: 's3cret' } });
    open.push(() => s.close());
    const r = await runBerth(['worker', '--server', s.address, '--name', 'w1', '--cpus', '1', '--gpus', ''], {
      BERTH_TOKEN: 'wrong',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('token');
  });

  it('--help shows every flag and the token variable', async () => {
    const r = await runBerth(['worker', '--help']);
    expect(r.code).toBe(0);
    for (const flag of [
      '--server',
      '--name',
      '--labels',
      '--cpus',
      '--gpus',
      '--ram-mb',
      '--max-parallel',
      '--grace',
      'BERTH_TOKEN',
    ])
      expect(r.stdout).toContain(flag);
  });

  it.each([
    [['--max-parallel', 'two'], '--max-parallel', 'two'],
    [['--gpus', '3-1'], '--gpus', '3-1'],
    [['--server', 'nowhere'], '--server', 'nowhere'],
    [['--labels', 'a b'], '--labels', 'a b'],
    [['--grace', '-1'], '--grace', '-1'],
  ])('berth worker %j exits 2 naming the flag and the value', async (args, flag, value) => {
    const r = await runBerth(['worker', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(r.stderr).toContain(value);
  });
});
