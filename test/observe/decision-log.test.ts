/**
 * Issue 13 item 4: the real `berth serve` logs every placement decision as one structured JSON
 * line (pino) with the event's fields — grants, queues with their reason, clamps, fall-backs,
 * releases, attaches, detaches at info; calls and their endings at debug.
 */
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { WorkerServiceClient } from '../../generated/ts/berth/v1/worker.js';
import { claim, fakeWorker, watch } from '../support/claims.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';

type Line = Record<string, unknown> & { level: number; msg: string; event?: string };

describe('decision logs of a real berth serve', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const f of cleanups.splice(0)) f();
  });

  it(
    'logs a grant, a queue with its reason, a clamp, a fall-back, releases, an attach, ' +
      'a detach and a call as JSON lines',
    async () => {
      const child = spawnBerth([
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--cpus',
        '2',
        '--gpus',
        '0-0',
        '--log-level',
        'debug',
      ]);
      const done = finished(child);
      const serving = JSON.parse(await waitForLine(child, /berth serving/)) as { address: string };
      const placement = new PlacementServiceClient(serving.address, credentials.createInsecure());
      const workers = new WorkerServiceClient(serving.address, credentials.createInsecure());
      cleanups.push(
        () => placement.close(),
        () => workers.close(),
        () => child.kill('SIGKILL'),
      );
      const w = watch(placement);
      await w.ready;

      const a = claim(placement, { cpus: 2, node: 'f.a', runId: 'r1' });
      await a.granted;
      const b = claim(placement, { cpus: 1, node: 'f.b', runId: 'r1' });
      await b.queued;
      await a.release();
      await b.granted;
      await b.release();
      const big = claim(placement, { cpus: 8, gpus: 4, node: 'f.big', runId: 'r1' });
      expect((await big.granted).clamped).toBe(true);
      await big.release();
      const pref = claim(placement, {
        cpus: 1,
        label: 'tpu',
        policy: Policy.POLICY_PREFER,
        node: 'f.pref',
        runId: 'r1',
      });
      expect((await pref.granted).fellBack).toBe(true);
      await pref.release();
      const worker = fakeWorker(workers, 'w1', { cpus: 4, gpuIds: [0, 1] }, ['gpu']);
      await worker.welcomed;
      worker.close();
      await w.next((e) => e.kind === 'worker_detached');
      const r = await run(placement, runRequest({ argv: ['true'], runId: 'r2', flow: 'f', node: 'call', cpus: 1 }))
        .done;
      expect(r.error).toBeNull();
      const released = (e: { kind: string; runId: string }) => e.kind === 'claim_released' && e.runId === 'r2';
      await (w.seen.find(released) ?? w.next(released)); // the release may precede the end of the Run stream
      w.cancel();
      child.kill('SIGTERM');
      const out = await done;
      const lines = out.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Line);
      const find = (event: string, more: Record<string, unknown> = {}) => {
        const hit = lines.find(
          (l) =>
            l.event === event && Object.entries(more).every(([k, v]) => JSON.stringify(l[k]) === JSON.stringify(v)),
        );
        if (!hit) throw new Error(`no ${event} line with ${JSON.stringify(more)} in:\n${out.stderr}`);
        return hit;
      };
      const INFO = 30;
      const DEBUG = 20;
      expect(find('node_placed', { node: 'f.a' })).toMatchObject({
        level: INFO,
        machine: 'engine',
        asked: { cpus: 2, gpus: 0 },
        granted: { cpus: 2, gpus: 0 },
        msg: '2 cpu(s) on engine',
      });
      expect(find('node_queued', { node: 'f.b' })).toMatchObject({
        level: INFO,
        msg: '1 cpu(s)',
        queued: { detail: '1 cpu(s)', position: 1, bestMachine: 'engine' },
      });
      expect(find('node_placed', { node: 'f.b' }).durationMs).toEqual(expect.any(Number));
      expect(find('node_clamped', { node: 'f.big' })).toMatchObject({
        level: INFO,
        asked: { cpus: 8, gpus: 4 },
        granted: { cpus: 2, gpus: 1 },
        limiting: 'gpus',
        clamped: true,
      });
      expect(find('node_placed', { node: 'f.big' })).toMatchObject({
        clamped: true,
        gpuIds: [0],
        asked: { cpus: 8, gpus: 4 },
      });
      expect(find('node_placed', { node: 'f.pref' })).toMatchObject({ level: INFO, fellBack: true, label: 'tpu' });
      expect(find('claim_released', { node: 'f.a' })).toMatchObject({
        level: INFO,
        outcome: 'released',
        granted: { cpus: 2 },
      });
      expect(find('worker_attached', { machine: 'w1' })).toMatchObject({ level: INFO, label: 'gpu', gpuIds: [0, 1] });
      expect(find('worker_detached', { machine: 'w1' }).level).toBe(INFO);
      expect(find('call_started', { callId: 'r2:f.call' })).toMatchObject({ level: DEBUG, machine: 'engine' });
      expect(find('call_finished', { callId: 'r2:f.call' })).toMatchObject({ level: DEBUG, outcome: 'result' });
      expect(lines.filter((l) => l.event === 'watch_started')).toEqual([]);
    },
  );

  it('at the default level info, calls are not logged but grants are', async () => {
    const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--cpus', '2']);
    const done = finished(child);
    const serving = JSON.parse(await waitForLine(child, /berth serving/)) as { address: string };
    const placement = new PlacementServiceClient(serving.address, credentials.createInsecure());
    cleanups.push(
      () => placement.close(),
      () => child.kill('SIGKILL'),
    );
    const r = await run(placement, runRequest({ argv: ['true'], runId: 'r3', flow: 'f', node: 'quiet', cpus: 1 })).done;
    expect(r.error).toBeNull();
    child.kill('SIGTERM');
    const out = await done;
    const events = out.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as Line).event)
      .filter(Boolean);
    expect(events).toContain('node_placed');
    expect(events).not.toContain('call_started');
    expect(events).not.toContain('call_finished');
  });
});
