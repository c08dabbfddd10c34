/**
 * Issue #4 acceptance 11, 12 and 14: the real agent (in-process WorkerAgent, real python3 and
 * real subprocesses) attached to the real server over real gRPC.
 */
import { status } from '@grpc/grpc-js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { kinds, run, runRequest, terminal, outputLines } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import { snapshot } from '../support/snapshot.js';
import { processAlive } from '../support/process-groups.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function agent(address: string, o: { gpuIds?: number[]; graceMs?: number } = {}): Promise<WorkerAgent> {
  const a = new WorkerAgent(
    {
      server: address,
      name: 'w1',
      labels: ['w'],
      inventory: { cpus: 4, gpuIds: o.gpuIds ?? [] },
      maxParallel: 4,
      graceMs: o.graceMs ?? 10_000,
      backoff: { baseMs: 100, capMs: 1000 },
    },
    silentLogger,
  );
  const attached = a.nextAttach();
  a.start();
  open.push(() => a.stop());
  await attached;
  return a;
}
async function setup(o: { gpuIds?: number[]; graceMs?: number } = {}) {
  const s = await startServer({ cpus: 1 });
  open.push(() => s.close());
  const a = await agent(s.address, o);
  return { s, a };
}
function cancel(s: TestServer, runId: string): Promise<{ calls: number; claims: number }> {
  return new Promise((resolve, reject) => s.placement.cancel({ runId }, (e, r) => (e ? reject(e) : resolve(r))));
}
function firstLogLine(responses: ReturnType<typeof run>['responses']): string | undefined {
  return outputLines({ responses })[0]?.line;
}

describe('the real agent', () => {
  it('11a: a Python node run with 2 cpus sees OMP_NUM_THREADS=2', async () => {
    const { s } = await setup();
    const source = 'import os\ndef process():\n    return {"threads": int(os.environ["OMP_NUM_THREADS"])}\n';
    const o = await run(s.placement, runRequest({ label: 'w', cpus: 2, source })).done;
    expect(o.error).toBeNull();
    expect(terminal(o)?.value).toMatchObject({ value: { threads: 2 } });
    expect(o.responses[0].kind).toMatchObject({ $case: 'started', value: { machine: 'w1' } });
  });

  it('11b: report("loss", 0.5) arrives as a metric event before the result', async () => {
    const { s } = await setup();
    const o = await run(
      s.placement,
      runRequest({ label: 'w', source: 'def process():\n    report("loss", 0.5)\n    return "ok"\n' }),
    ).done;
    expect(kinds(o)).toEqual(['started', 'event', 'result']);
    expect(o.responses[1].kind).toMatchObject({
      $case: 'event',
      value: { kind: { $case: 'metric', value: { name: 'loss', value: 0.5 } } },
    });
  });

  it(
    '11c: a node raising ValueError("bad") is a Failure with class, ' +
      'message and a traceback naming the source line',
    async () => {
      const { s } = await setup();
      const o = await run(
        s.placement,
        runRequest({ label: 'w', source: 'def process():\n    x = 1\n    raise ValueError("bad")\n' }),
      ).done;
      expect(o.error).toBeNull();
      const t = terminal(o);
      expect(t).toMatchObject({ $case: 'failure', value: { type: 'ValueError', message: 'bad' } });
      const tb = t?.$case === 'failure' ? t.value.traceback : '';
      expect(tb).toContain('line 3');
      expect(tb).toContain('raise ValueError("bad")');
    },
  );

  it('11d: a command granted GPU 1 logs CUDA_VISIBLE_DEVICES=1', async () => {
    const { s } = await setup({ gpuIds: [1] });
    const o = await run(
      s.placement,
      runRequest({ label: 'w', gpus: 1, argv: ['sh', '-c', 'echo $CUDA_VISIBLE_DEVICES'] }),
    ).done;
    expect(o.error).toBeNull();
    expect(firstLogLine(o.responses)).toBe('1');
    expect(terminal(o)?.value).toMatchObject({ value: { exit_code: 0 } });
  });

  it(
    '11e: Cancel stops a `sleep 60` command and its children; the Run ends CANCELLED and the books are ' + 'full again',
    async () => {
      const { s } = await setup();
      const r = run(
        s.placement,
        runRequest({ runId: 'rc', label: 'w', cpus: 2, argv: ['sh', '-c', 'sleep 60 & echo $!; wait'] }),
      );
      await until(() => firstLogLine(r.responses) !== undefined);
      const child = Number(firstLogLine(r.responses));
      expect(await cancel(s, 'rc')).toEqual({ calls: 1, claims: 0 });
      const o = await r.done;
      expect(o.error?.code).toBe(status.CANCELLED);
      await until(() => !processAlive(child));
      await until(async () => (await snapshot(s.placement)).machines.find((m) => m.name === 'w1')?.free?.cpus === 4);
    },
  );

  it('11f: a node that ignores SIGTERM is killed after the grace', async () => {
    const { s } = await setup({ graceMs: 500 });
    const source =
      'import os, signal, time\ndef process():\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n' +
      '    print(os.getpid(), flush=True)\n    time.sleep(60)\n';
    const r = run(s.placement, runRequest({ runId: 'rk', label: 'w', source }));
    await until(() => firstLogLine(r.responses) !== undefined);
    const pid = Number(firstLogLine(r.responses));
    const cancelled = Date.now();
    await cancel(s, 'rk');
    expect((await r.done).error?.code).toBe(status.CANCELLED);
    await until(() => !processAlive(pid), 8000);
    expect(Date.now() - cancelled).toBeGreaterThanOrEqual(400);
  });

  it(
    '12: after the server stops and starts again on the same port, ' +
      'the agent re-attaches by itself and takes new calls',
    async () => {
      const s1 = await startServer({ cpus: 1 });
      const port = s1.server.port;
      const a = await agent(s1.address);
      const back = a.nextAttach();
      await s1.close(200);
      const s2 = await startServer({ cpus: 1, flags: { listen: `127.0.0.1:${port}` } });
      open.push(() => s2.close());
      const restarted = Date.now();
      await back;
      expect(Date.now() - restarted).toBeLessThan(5000);
      const o = await run(s2.placement, runRequest({ label: 'w', source: 'def process():\n    return "again"\n' }))
        .done;
      expect(terminal(o)?.value).toMatchObject({ value: 'again' });
    },
  );

  it(
    '14: a retried Run with the same call id while the first is in flight joins it: the node runs once, ' +
      'both get the result',
    async () => {
      const { s } = await setup();
      const dir = mkdtempSync(join(tmpdir(), 'berth-join-'));
      open.push(() => rmSync(dir, { recursive: true, force: true }));
      const marker = join(dir, 'runs');
      const source =
        `import time\ndef process():\n    with open(${JSON.stringify(marker)}, "a") as f:\n` +
        `        f.write("ran\\n")\n    time.sleep(0.5)\n    return "once"\n`;
      const req = runRequest({ runId: 'rj', flow: 'f', node: 'n', label: 'w', source });
      const first = run(s.placement, req);
      await until(() => first.responses.length > 0);
      const second = run(s.placement, req);
      const [o1, o2] = await Promise.all([first.done, second.done]);
      expect(terminal(o1)?.value).toMatchObject({ callId: 'rj:f.n', value: 'once' });
      expect(terminal(o2)?.value).toMatchObject({ callId: 'rj:f.n', value: 'once' });
      expect(readFileSync(marker, 'utf8')).toBe('ran\n');
    },
  );
});
