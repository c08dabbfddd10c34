/**
 * Run inside a held claim, on the engine host, and with bad input; bad Hello frames.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { claim } from '../support/claims.js';
import { kinds, run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { TestWorker } from '../support/test-worker.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});
async function server(): Promise<TestServer> {
  const s = await startServer({ cpus: 2 });
  open.push(() => s.close());
  return s;
}

describe('Run placement and input', () => {
  it('a lone berth serve runs a Python node on the engine host with the same executors', async () => {
    const s = await server();
    const o = await run(
      s.placement,
      runRequest({
        source:
          'import os\ndef process(x):\n    print("hi")\n    return {"x": x, "threads": ' +
          'os.environ["OMP_NUM_THREADS"]}\n',
        kwargs: { x: 3 },
      }),
    ).done;
    expect(o.error).toBeNull();
    expect(kinds(o)).toEqual(['started', 'event', 'result']);
    expect(o.responses[0].kind).toMatchObject({ $case: 'started', value: { machine: 'engine' } });
    expect(terminal(o)?.value).toMatchObject({ value: { x: 3, threads: '1' } });
  });

  it("a Run inside a held claim goes to that claim's machine with its allocation", async () => {
    const s = await server();
    const w = await TestWorker.attach(s.address, { name: 'gpu1', labels: ['gpu'], cpus: 4, gpuIds: [0, 1] });
    open.push(() => w.close());
    const c = claim(s.placement, { gpus: 2, label: 'gpu' });
    open.push(() => c.call.cancel());
    const g = await c.granted;
    const r = run(s.placement, runRequest({ claimId: g.claimId }));
    const call = await w.next('call');
    expect(call.allocation).toMatchObject({ gpuIds: [0, 1], env: { CUDA_VISIBLE_DEVICES: '0,1' } });
    w.result(call.callId, 'ok');
    expect((await r.done).error).toBeNull();
  });

  it(
    'Cancel stops a command running on the engine host: ' + 'the Run ends CANCELLED and the books are full again',
    async () => {
      const s = await server();
      const r = run(
        s.placement,
        runRequest({ runId: 'eng', cpus: 2, argv: ['sh', '-c', 'echo started; exec sleep 60'] }),
      );
      await until(() => r.responses.some((x) => x.kind?.$case === 'event'));
      const counts = await new Promise<{ calls: number }>((resolve, reject) =>
        s.placement.cancel({ runId: 'eng' }, (e, res) => (e ? reject(e) : resolve(res))),
      );
      expect(counts.calls).toBe(1);
      expect((await r.done).error?.code).toBe(status.CANCELLED);
      await until(() => s.server.context.placer.snapshot().machines[0].free.cpus === 2);
    },
  );

  it('a Run with neither a claim_id nor an ask is INVALID_ARGUMENT naming placement', async () => {
    const s = await server();
    const o = await run(s.placement, { ...runRequest({}), placement: undefined }).done;
    expect(o.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(o.error?.details).toContain('placement');
  });

  it('an unknown claim_id is NOT_FOUND', async () => {
    const s = await server();
    const o = await run(s.placement, runRequest({ claimId: 'c999' })).done;
    expect(o.error?.code).toBe(status.NOT_FOUND);
    expect(o.error?.details).toContain('c999');
  });

  it.each([
    [{ runId: '' }, 'run_id'],
    [{ node: 'a b' }, 'node'],
    [{ argv: [] as string[] }, 'command.argv'],
  ])('bad request %j is INVALID_ARGUMENT naming %s', async (bad, field) => {
    const s = await server();
    const o = await run(s.placement, runRequest(bad)).done;
    expect(o.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(o.error?.details).toContain(field);
  });

  it('a first frame that is not a valid Hello is INVALID_ARGUMENT naming the field, and nothing attaches', async () => {
    const s = await server();
    const w = new TestWorker(s.address, { name: 'bad name!' });
    open.push(() => w.close());
    const ended = (await w.waitEnded()) as ServiceError;
    expect(ended.code).toBe(status.INVALID_ARGUMENT);
    expect(ended.details).toContain('hello.name');
    const snap = await new Promise<{ machines: { name: string }[] }>((resolve, reject) =>
      s.placement.getSnapshot({}, (e, r) => (e ? reject(e) : resolve(r))),
    );
    expect(snap.machines.map((m) => m.name)).toEqual(['engine']);
  });
});
