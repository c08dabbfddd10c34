/**
 * Issue 19 item 10: a disconnected (held) worker is visible — GetSnapshot's Machine.state and hold_left_ms,
 * `berth status`, the page's data, metrics counting disconnects, reconnects and holds that ran out, and one
 * decision log line for each.
 */
import { Writable } from 'node:stream';
import { credentials } from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MachineState, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { renderStatus } from '../../src/cli/render-status.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { BerthServer } from '../../src/server/server.js';
import { run, runRequest } from '../support/run-client.js';
import { tempStateDir } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';
import { TestWorker } from '../support/test-worker.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

const AGENT = { name: 'w1', labels: ['gpu'], agentId: 'host-a:/state', instanceId: 'i-1' };

/** One Prometheus counter's value from /metrics text (0 when absent). */
function counter(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('a disconnected worker is visible', () => {
  it('in GetSnapshot, berth status, the page data, the metrics and the decision log', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    const flags = { listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0', workerHold: 0.3, stateDir: tempStateDir() };
    const options = resolveServeOptions(flags, {});
    const server = new BerthServer(options, { cpus: 2, gpuIds: [] }, { log: pino({ level: 'info' }, sink) });
    await server.start();
    open.push(() => server.stop(500));
    const client = new PlacementServiceClient(server.address, credentials.createInsecure());
    open.push(() => client.close());
    const w = await TestWorker.attach(server.address, AGENT);
    open.push(() => w.close());
    const r = run(client, runRequest({ label: 'gpu', disconnectGraceMs: 10_000 }));
    const call = await w.next('call');
    w.drop();
    await until(() => r.responses.some((x) => x.kind?.$case === 'link'));

    const snap = await snapshot(client);
    const m = machine(snap, 'w1');
    expect(m.state).toBe(MachineState.MACHINE_STATE_DISCONNECTED);
    expect(m.holdLeftMs).toBeGreaterThan(8000);
    expect(machine(snap, 'engine').state).toBe(MachineState.MACHINE_STATE_UNSPECIFIED);
    expect(renderStatus(snap)).toMatch(/w1\s+worker \(disconnected, \d+\.\ds left\)/);
    const page = (await (await fetch(`${server.observe!.url}/api/snapshot`)).json()) as {
      machines: { name: string; state: number; holdLeftMs: number }[];
    };
    expect(page.machines.find((x) => x.name === 'w1')).toMatchObject({
      state: MachineState.MACHINE_STATE_DISCONNECTED,
    });
    expect(await (await fetch(`${server.observe!.url}/`)).text()).toContain('disconnected');

    const back = await TestWorker.attach(server.address, {
      ...AGENT,
      heldCalls: [{ callId: call.callId, lastSeq: 0 }],
    });
    open.push(() => back.close());
    back.result(call.callId, 1);
    expect((await r.done).error).toBeNull();
    expect(renderStatus(await snapshot(client))).not.toContain('disconnected');
    back.drop(); // no calls now: held for --worker-hold (0.3 s), then it leaves
    await until(async () => !(await snapshot(client)).machines.some((x) => x.name === 'w1'));

    const metrics = await (await fetch(`${server.observe!.url}/metrics`)).text();
    expect(counter(metrics, 'berth_worker_disconnects_total')).toBe(2);
    expect(counter(metrics, 'berth_worker_reconnects_total')).toBe(1);
    expect(counter(metrics, 'berth_worker_holds_expired_total')).toBe(1);
    const decisions = lines.filter((l) => typeof l.event === 'string' && String(l.event).startsWith('worker_'));
    expect(decisions.map((l) => l.event)).toEqual([
      'worker_attached',
      'worker_disconnected',
      'worker_reconnected',
      'worker_disconnected',
      'worker_hold_expired',
      'worker_detached',
    ]);
    expect(decisions[1].msg).toMatch(/worker w1 disconnected: .*; held for \d+ ms/);
  });
});
