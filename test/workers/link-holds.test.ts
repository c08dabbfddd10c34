/**
 * A lost worker link while the server runs (SPEC S2, issue 19 items 2, 8, 10): the worker is held as disconnected
 * for each call's hold, its callers are told, the same agent instance re-attaching re-binds its calls, another
 * instance or another agent is handled at once. Through the real server over real gRPC; the worker is the
 * raw-frame double with an agent id and instance.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { MachineState, WorkerLinkState, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { claim, watch } from '../support/claims.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';
import { TestWorker, type TestWorkerOptions } from '../support/test-worker.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

const AGENT = { agentId: 'host-a:/var/lib/berth-a', instanceId: 'i-1' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function server(flags: Record<string, unknown> = {}): Promise<TestServer> {
  const s = await startServer({ cpus: 2, flags });
  open.push(() => s.close());
  return s;
}

async function worker(s: TestServer, o: Partial<TestWorkerOptions> = {}): Promise<TestWorker> {
  const w = await TestWorker.attach(s.address, { name: 'w1', labels: ['gpu'], cpus: 8, ...AGENT, ...o });
  open.push(() => w.close());
  return w;
}

/** What the caller saw, in order: log lines as `line:<text>`, link changes as their state, the ending. */
function seen(responses: RunResponse[]): string[] {
  return responses.flatMap((r) => {
    const k = r.kind;
    if (k?.$case === 'event' && k.value.kind?.$case === 'log') return [`line:${k.value.kind.value.line}`];
    if (k?.$case === 'link') return [WorkerLinkState[k.value.state].replace('WORKER_LINK_STATE_', '')];
    if (k?.$case === 'result' || k?.$case === 'failure') return [k.$case];
    return [];
  });
}

describe('a lost worker link (SPEC S2)', () => {
  it(
    'a 1 s break with the default hold costs nothing: ' +
      'the caller sees DISCONNECTED, RECONNECTED and the result, every line once',
    async () => {
      const s = await server();
      const w = await worker(s);
      const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 30_000 }));
      const call = await w.next('call');
      w.line(call.callId, 1, 'one');
      await until(() => seen(r.responses).includes('line:one'));
      w.drop();
      await until(() => seen(r.responses).includes('DISCONNECTED'));
      const link = r.responses.find((x) => x.kind?.$case === 'link')!.kind as { value: { holdLeftMs: number } };
      expect(link.value.holdLeftMs).toBe(2000);
      const held = machine(await snapshot(s.placement), 'w1');
      expect(held.state).toBe(MachineState.MACHINE_STATE_DISCONNECTED);
      expect(held.holdLeftMs).toBeGreaterThan(0);
      expect(held.holdLeftMs).toBeLessThanOrEqual(2000);
      expect(held.claims).toBe(1);

      await sleep(1000); // the break
      const back = await worker(s, { heldCalls: [{ callId: call.callId, lastSeq: 2 }] });
      const welcome = await back.next('welcome');
      expect(welcome.calls).toEqual([{ callId: call.callId, seq: 1, ended: false }]);
      back.line(call.callId, 1, 'one'); // resent: already delivered
      back.line(call.callId, 2, 'two');
      back.line(call.callId, 2, 'two'); // a duplicate resend
      back.result(call.callId, 42);
      const o = await r.done;
      expect(o.error).toBeNull();
      expect(seen(o.responses)).toEqual(['line:one', 'DISCONNECTED', 'RECONNECTED', 'line:two', 'result']);
      expect(terminal(o)?.value).toMatchObject({ value: 42 });
      const ack = await back.next('ack', (a) => a.calls.some((c) => c.callId === call.callId && c.ended));
      expect(ack.calls.find((c) => c.callId === call.callId)?.seq).toBe(2);
      expect(machine(await snapshot(s.placement), 'w1').state).toBe(MachineState.MACHINE_STATE_CONNECTED);
      expect(s.invariantErrors).toEqual([]);
    },
  );

  it('a break past the hold fails the call within hold + 1 s, not at its deadline; books come back', async () => {
    const s = await server();
    const events = watch(s.placement);
    open.push(() => events.cancel());
    await events.ready;
    const w = await worker(s);
    const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 30_000 }));
    await w.next('call');
    const cut = Date.now();
    w.drop();
    const o = await r.done;
    const took = Date.now() - cut;
    expect(took).toBeGreaterThanOrEqual(1900);
    expect(took).toBeLessThan(3000);
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toMatch(/worker w1 went away: .*its hold of 2000 ms ran out/);
    expect(seen(o.responses)).toEqual(['DISCONNECTED']);
    await until(async () => !(await snapshot(s.placement)).machines.some((m) => m.name === 'w1'));
    expect((await snapshot(s.placement)).held).toEqual([]);
    const kinds = events.seen.map((e) => e.kind);
    expect(kinds).toContain('worker_disconnected');
    expect(kinds).toContain('worker_hold_expired');
    expect(s.invariantErrors).toEqual([]);
  });

  it('disconnect_grace_ms 10000 survives a 3 s break while a default-hold call on the same worker fails', async () => {
    const s = await server();
    const w = await worker(s);
    const long = run(s.placement, runRequest({ runId: 'long', label: 'gpu', disconnectGraceMs: 10_000 }));
    const short = run(s.placement, runRequest({ runId: 'short', label: 'gpu' }));
    await until(() => w.calls.length === 2);
    const longCall = w.calls.find((c) => c.runId === 'long')!;
    expect(longCall.disconnectGraceMs).toBe(10_000);
    w.line(longCall.callId, 1, 'before');
    await until(() => seen(long.responses).includes('line:before'));
    const cut = Date.now();
    w.drop();
    const failed = await short.done;
    expect(Date.now() - cut).toBeLessThan(3000);
    expect(failed.error?.code).toBe(status.UNAVAILABLE);
    expect(failed.error?.details).toContain('went away');
    expect(machine(await snapshot(s.placement), 'w1').state).toBe(MachineState.MACHINE_STATE_DISCONNECTED);
    await sleep(3000 - (Date.now() - cut)); // the rest of the 3 s break
    const back = await worker(s, {
      heldCalls: [
        { callId: longCall.callId, lastSeq: 2 },
        { callId: `short:flow.node`, lastSeq: 0 },
      ],
    });
    expect((await back.next('welcome')).calls).toEqual([{ callId: longCall.callId, seq: 1, ended: false }]);
    back.line(longCall.callId, 2, 'after');
    back.result(longCall.callId, 'survived');
    const o = await long.done;
    expect(o.error).toBeNull();
    expect(seen(o.responses)).toEqual(['line:before', 'DISCONNECTED', 'RECONNECTED', 'line:after', 'result']);
    const link = o.responses.find((x) => x.kind?.$case === 'link')!.kind as { value: { holdLeftMs: number } };
    expect(link.value.holdLeftMs).toBe(10_000);
    expect(s.invariantErrors).toEqual([]);
  });

  it(
    'nothing new is placed on a disconnected machine, ' + 'but an ask needing it waits (not clamped) during the hold',
    async () => {
      const s = await server();
      const w = await worker(s);
      const r = run(s.placement, runRequest({ label: 'gpu', disconnectGraceMs: 10_000 }));
      const call = await w.next('call');
      w.drop();
      await until(() => seen(r.responses).includes('DISCONNECTED'));
      // w1 has 7 cores free, but it is disconnected: the labelled ask waits, the big one is not clamped to the engine.
      const labelled = claim(s.placement, { cpus: 1, label: 'gpu', policy: 2 });
      open.push(() => labelled.call.cancel());
      const big = claim(s.placement, { cpus: 6 });
      open.push(() => big.call.cancel());
      await labelled.queued;
      const q = await big.queued;
      expect(q.wanted?.cpus).toBe(6);
      expect(s.server.context.placer.verdict({ ...ask6(), cpus: 6 }).verdict).toBe('waits');
      expect((await snapshot(s.placement)).held.map((h) => h.machine)).toEqual(['w1']);
      const back = await worker(s, { heldCalls: [{ callId: call.callId, lastSeq: 0 }] });
      await back.next('welcome');
      const [g1, g2] = await Promise.all([labelled.granted, big.granted]);
      expect([g1.machine, g2.machine]).toEqual(['w1', 'w1']);
      expect(g2.clamped).toBe(false);
      back.result(call.callId, 1);
      expect((await r.done).error).toBeNull();
      await labelled.release();
      await big.release();
      expect(s.invariantErrors).toEqual([]);
    },
  );

  it('a reconnect keeps a held claim with the same GPU ids; a new claim gets the others', async () => {
    const s = await server();
    const w = await worker(s, { gpuIds: [0, 1, 2, 3] });
    const first = claim(s.placement, { cpus: 1, gpus: 2, label: 'gpu', policy: 2 });
    open.push(() => first.call.cancel());
    const g = await first.granted;
    w.drop();
    await until(
      async () => machine(await snapshot(s.placement), 'w1').state === MachineState.MACHINE_STATE_DISCONNECTED,
    );
    const back = await worker(s, { gpuIds: [0, 1, 2, 3] });
    await back.next('welcome');
    const snap = await snapshot(s.placement);
    expect(machine(snap, 'w1').state).toBe(MachineState.MACHINE_STATE_CONNECTED);
    expect(snap.held.map((h) => [h.claimId, h.allocation?.gpuIds])).toEqual([[g.claimId, g.allocation?.gpuIds]]);
    const second = claim(s.placement, { cpus: 1, gpus: 2, label: 'gpu', policy: 2 });
    open.push(() => second.call.cancel());
    const g2 = await second.granted;
    expect([...(g.allocation?.gpuIds ?? []), ...(g2.allocation?.gpuIds ?? [])].sort()).toEqual([0, 1, 2, 3]);
    await first.release();
    await second.release();
    expect(s.invariantErrors).toEqual([]);
  });

  it(
    'a machine restored as disconnected (restoreMachine) makes a required ask wait, ' + 'and its worker reconnects it',
    async () => {
      const s = await server();
      const placer = s.server.context.placer;
      const spec = { name: 'w1', labels: ['gpu'], inventory: { cpus: 8, gpuIds: [] }, remote: true };
      placer.restoreMachine(spec, Date.now() + 10_000);
      expect(machine(await snapshot(s.placement), 'w1').state).toBe(MachineState.MACHINE_STATE_DISCONNECTED);
      const waiting = claim(s.placement, { cpus: 4, label: 'gpu', policy: 2 });
      open.push(() => waiting.call.cancel());
      expect((await waiting.queued).wanted?.cpus).toBe(4);
      const w = await worker(s);
      await w.next('welcome');
      expect((await waiting.granted).machine).toBe('w1');
      await waiting.release();
    },
  );

  it('a Stopping frame fails the calls at once', async () => {
    const s = await server();
    const w = await worker(s);
    const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 30_000 }));
    await w.next('call');
    const said = Date.now();
    w.stopping('SIGTERM');
    const o = await r.done;
    expect(Date.now() - said).toBeLessThan(1000);
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toContain('worker w1 went away: the agent is stopping (SIGTERM)');
    await until(async () => !(await snapshot(s.placement)).machines.some((m) => m.name === 'w1'));
  });

  it('a new instance of the same agent fails the old instance’s calls at once and attaches anew', async () => {
    const s = await server();
    const w = await worker(s);
    const r = run(s.placement, runRequest({ label: 'gpu', timeoutMs: 30_000, disconnectGraceMs: 60_000 }));
    await w.next('call');
    w.drop();
    await until(() => seen(r.responses).includes('DISCONNECTED'));
    const restarted = Date.now();
    const again = await worker(s, { instanceId: 'i-2' });
    expect((await again.next('welcome')).calls).toEqual([]);
    const o = await r.done;
    expect(Date.now() - restarted).toBeLessThan(1000);
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toContain('went away: the agent restarted');
    const m = machine(await snapshot(s.placement), 'w1');
    expect(m.state).toBe(MachineState.MACHINE_STATE_CONNECTED);
    expect(m.claims).toBe(0);
    expect(s.invariantErrors).toEqual([]);
  });

  it(
    'another agent taking a live or held worker’s name is refused PERMISSION_DENIED naming the host; ' +
      'the call completes',
    async () => {
      const s = await server();
      const w = await worker(s);
      const r = run(s.placement, runRequest({ label: 'gpu', disconnectGraceMs: 10_000 }));
      const call = await w.next('call');
      const intruder = new TestWorker(s.address, { name: 'w1', agentId: 'host-b:/srv/berth', instanceId: 'x' });
      open.push(() => intruder.close());
      const refused = (await intruder.waitEnded()) as ServiceError;
      expect(refused.code).toBe(status.PERMISSION_DENIED);
      expect(refused.details).toContain('worker w1 is held by the agent on host-a');
      expect(refused.details).toContain('connected');
      w.drop(); // held now: still refused
      await until(() => seen(r.responses).includes('DISCONNECTED'));
      const again = new TestWorker(s.address, { name: 'w1', agentId: 'host-b:/srv/berth', instanceId: 'x' });
      open.push(() => again.close());
      const refusedHeld = (await again.waitEnded()) as ServiceError;
      expect(refusedHeld.code).toBe(status.PERMISSION_DENIED);
      expect(refusedHeld.details).toMatch(/held by the agent on host-a .*disconnected, \d+ ms of its hold left/);
      const back = await worker(s, { heldCalls: [{ callId: call.callId, lastSeq: 0 }] });
      await back.next('welcome');
      back.result(call.callId, 'mine');
      const o = await r.done;
      expect(o.error).toBeNull();
      expect(terminal(o)?.value).toMatchObject({ value: 'mine' });
    },
  );

  it('--worker-hold is validated with the flag named, and sets the default hold', async () => {
    const { resolveServeOptions } = await import('../../src/config/serve-options.js');
    expect(() => resolveServeOptions({ workerHold: 'soon' }, {})).toThrow(/--worker-hold/);
    expect(() => resolveServeOptions({}, { BERTH_WORKER_HOLD: '7200' })).toThrow(/BERTH_WORKER_HOLD.*3600/);
    expect(resolveServeOptions({}, {}).workerHold).toBe(2);
    const s = await server({ workerHold: 0.5 });
    const w = await worker(s);
    const r = run(s.placement, runRequest({ label: 'gpu' }));
    await w.next('call');
    const cut = Date.now();
    w.drop();
    const o = await r.done;
    expect(Date.now() - cut).toBeLessThan(1500);
    expect(o.error?.details).toContain('its hold of 500 ms ran out');
  });

  it('a Run asking disconnect_grace_ms above an hour is refused INVALID_ARGUMENT naming the field', async () => {
    const s = await server();
    const o = await run(s.placement, runRequest({ disconnectGraceMs: 3_600_001 })).done;
    expect(o.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(o.error?.details).toContain('disconnect_grace_ms');
    expect(o.error?.details).toContain('3600001');
  });
});

/** A normalized ask of 1 cpu with no label (for Satisfiable's verdict). */
function ask6() {
  return { cpus: 1, gpus: 0, label: '', policy: 'prefer' as const, node: 'n', runId: 'r', env: {} };
}
