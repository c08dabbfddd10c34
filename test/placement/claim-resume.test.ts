/**
 * Issue 19 item 3 (SPEC S3): a claim whose ask has hold_ms outlives a broken Claim stream (cancel,
 * a cut link) and awaits its holder, who takes it back with its resume token — same claim id, same
 * GPU ids, same env — while the runs inside keep running. A wrong token is NOT_FOUND and changes
 * nothing; Release and half-close still give it back at once; without hold_ms a broken stream
 * gives it back at once as before (P8); when the hold runs out the claim is given back and the
 * waiters are granted. Through the real server over real gRPC; link cuts through a TCP proxy.
 */
import { credentials, status, type ServiceError } from '@grpc/grpc-js';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Granted, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import type { BerthEvent, EventKind } from '../../src/events.js';
import { hashToken, newResumeToken } from '../../src/server/claim-holds.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim, fakeWorker, resumeClaim } from '../support/claims.js';
import { LinkProxy } from '../support/link-proxy.js';
import { run, runRequest, type RunHandle } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf, machine, snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A server whose engine host has 4 cpus and GPUs 0-3, and every event it emits. */
async function gpuServer(): Promise<{
  t: TestServer;
  events: BerthEvent[];
  next: (k: EventKind) => Promise<BerthEvent>;
}> {
  const t = await startServer({ cpus: 4, gpuIds: [0, 1, 2, 3] });
  open.push(() => t.close());
  const events: BerthEvent[] = [];
  let waiters: Array<{ kind: EventKind; resolve: (e: BerthEvent) => void }> = [];
  open.push(
    t.server.context.events.subscribe((e) => {
      events.push(e);
      for (const w of waiters) if (w.kind === e.kind) w.resolve(e);
      waiters = waiters.filter((w) => w.kind !== e.kind);
    }),
  );
  /** The next event of `kind` emitted from now on. */
  const next = (kind: EventKind) => new Promise<BerthEvent>((resolve) => waiters.push({ kind, resolve }));
  return { t, events, next };
}

const engine = (t: TestServer) => t.server.context.options.engineName;
const err = (h: { ended: Promise<ServiceError | null> }) => h.ended;

/** Grants a 2-GPU claim with hold `holdMs` on `client`, returning the handle and its Granted. */
async function held(client: PlacementServiceClient, holdMs: number, env: Record<string, string> = {}) {
  const h = claim(client, { cpus: 1, gpus: 2, holdMs, env });
  const g = await h.granted;
  return { h, g };
}

describe('a claim with hold_ms awaits its holder', () => {
  it('survives its stream being cancelled and is resumed with the same claim, GPU ids and env', async () => {
    const { t, events, next } = await gpuServer();
    const { h, g } = await held(t.placement, 10_000, { MY_VAR: 'x' });
    expect(g.resumeToken).toMatch(/^[A-Za-z0-9_-]{22,}$/); // >= 128 bits, base64url
    expect(g.resumed).toBe(false);
    const awaiting = next('claim_awaiting_holder');
    h.call.cancel();
    expect((await awaiting).claimId).toBe(g.claimId);

    const s = await snapshot(t.placement);
    expect(machine(s, engine(t)).free?.gpus).toBe(2); // still held
    const heldClaim = s.held.find((x) => x.claimId === g.claimId);
    expect(heldClaim?.awaitingHolder).toBe(true);
    expect(heldClaim?.holdLeftMs).toBeGreaterThan(5_000);
    expect(heldClaim?.holdLeftMs).toBeLessThanOrEqual(10_000);

    const r = resumeClaim(t.placement, g.claimId, g.resumeToken);
    const back = await r.granted;
    expect(back).toEqual({ ...g, resumed: true } satisfies Granted);
    expect(back.allocation?.env.MY_VAR).toBe('x');
    const after = await snapshot(t.placement);
    expect(after.held.find((x) => x.claimId === g.claimId)?.awaitingHolder).toBe(false);
    expect(events.some((e) => e.kind === 'claim_resumed' && e.claimId === g.claimId)).toBe(true);

    await r.release(); // the resumed stream is a lease like any other
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
    // The token is in no event (so in no decision log line, which is made of events).
    expect(JSON.stringify(events)).not.toContain(g.resumeToken);
  });

  it('survives a cut of its link (TCP proxy) and is resumed over a new connection', async () => {
    const { t, next } = await gpuServer();
    const proxy = new LinkProxy(t.address);
    const via = await proxy.start();
    open.push(() => proxy.close());
    const viaProxy = new PlacementServiceClient(via, credentials.createInsecure());
    open.push(() => viaProxy.close());
    const { h, g } = await held(viaProxy, 10_000);
    const awaiting = next('claim_awaiting_holder');
    proxy.cut();
    proxy.restore(); // a reset link: the open connection is gone, a new one goes through
    expect((await err(h))?.code).toBe(status.UNAVAILABLE);
    await awaiting;
    const r = resumeClaim(viaProxy, g.claimId, g.resumeToken);
    expect((await r.granted).allocation?.gpuIds).toEqual(g.allocation?.gpuIds);
    expect(proxy.connections).toBe(2);
    await r.release();
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
  });

  it('a wrong token or an unknown id is NOT_FOUND with one message and changes nothing', async () => {
    const { t, next } = await gpuServer();
    const { h, g } = await held(t.placement, 10_000);
    const awaiting = next('claim_awaiting_holder');
    h.call.cancel();
    await awaiting;
    const other = `${g.resumeToken[0] === 'A' ? 'B' : 'A'}${g.resumeToken.slice(1)}`; // one character off
    const wrong = await err(resumeClaim(t.placement, g.claimId, other));
    const unknown = await err(resumeClaim(t.placement, 'c-nobody', g.resumeToken));
    expect(wrong?.code).toBe(status.NOT_FOUND);
    expect(unknown?.code).toBe(status.NOT_FOUND);
    expect(wrong?.details.replace(g.claimId, 'ID')).toBe(unknown?.details.replace('c-nobody', 'ID'));
    const s = await snapshot(t.placement);
    expect(s.held.find((x) => x.claimId === g.claimId)?.awaitingHolder).toBe(true);
    expect(machine(s, engine(t)).free?.gpus).toBe(2);
    const empty = await err(resumeClaim(t.placement, g.claimId, ''));
    expect(empty?.code).toBe(status.INVALID_ARGUMENT);
    expect(empty?.details).toContain('resume.resume_token: required');
    // The holder still takes it back.
    const r = resumeClaim(t.placement, g.claimId, g.resumeToken);
    expect((await r.granted).resumed).toBe(true);
    await r.release();
  });

  it('is not taken from a live stream: FAILED_PRECONDITION with the right token, NOT_FOUND with a wrong one', async () => {
    const { t } = await gpuServer();
    const { h, g } = await held(t.placement, 10_000);
    const right = await err(resumeClaim(t.placement, g.claimId, g.resumeToken));
    expect(right?.code).toBe(status.FAILED_PRECONDITION);
    expect(right?.details).toContain('held by a live stream');
    expect((await err(resumeClaim(t.placement, g.claimId, 'x'.repeat(22))))?.code).toBe(status.NOT_FOUND);
    await h.release(); // the live holder is untouched
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
  });

  it('is given back when the hold runs out: books full again, the waiter granted, the token dead', async () => {
    const { t, events, next } = await gpuServer();
    const { h, g } = await held(t.placement, 300);
    const big = claim(t.placement, { cpus: 1, gpus: 4 });
    await big.queued;
    const released = next('claim_released');
    h.call.cancel();
    const gone = await released;
    expect(gone).toMatchObject({ claimId: g.claimId, detail: 'hold ran out', outcome: 'hold_ran_out' });
    const awaited = events.find((e) => e.kind === 'claim_awaiting_holder');
    expect(gone.timeMs - (awaited?.timeMs ?? 0)).toBeGreaterThanOrEqual(290);
    expect((await big.granted).allocation?.gpuIds).toEqual([0, 1, 2, 3]);
    expect((await err(resumeClaim(t.placement, g.claimId, g.resumeToken)))?.code).toBe(status.NOT_FOUND);
    await big.release();
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
  });

  it('Release and half-close still give it back at once', async () => {
    const { t, events } = await gpuServer();
    const a = await held(t.placement, 10_000);
    await a.h.release();
    const b = await held(t.placement, 10_000);
    b.h.call.end(); // half-close
    expect(await err(b.h)).toBeNull();
    await until(async () => (await freeOf(t.placement, engine(t))).gpus === 4);
    expect(events.filter((e) => e.kind === 'claim_awaiting_holder')).toEqual([]);
    expect(events.filter((e) => e.kind === 'claim_released').map((e) => e.outcome)).toEqual([
      'released',
      'half_closed',
    ]);
  });

  it('keeps the runs inside it running while it awaits its holder', async () => {
    const { t, next } = await gpuServer();
    const dir = mkdtempSync(join(tmpdir(), 'berth-hold-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const go = join(dir, 'go');
    const { h, g } = await held(t.placement, 10_000);
    const script = `echo gpus=$CUDA_VISIBLE_DEVICES; while [ ! -e ${go} ]; do sleep 0.02; done; echo after`;
    const r: RunHandle = run(
      t.placement,
      runRequest({ runId: 'in-hold', claimId: g.claimId, argv: ['sh', '-c', script] }),
    );
    open.push(() => r.cancel());
    await until(() => r.responses.some((x) => x.kind?.$case === 'event'));
    const awaiting = next('claim_awaiting_holder');
    h.call.cancel();
    await awaiting;
    writeFileSync(go, '');
    const o = await r.done; // the run ends on its own, with its result
    expect(o.error).toBeNull();
    const lines = o.responses.flatMap((x) =>
      x.kind?.$case === 'event' && x.kind.value.kind?.$case === 'log' ? [x.kind.value.kind.value.line] : [],
    );
    expect(lines).toEqual([`gpus=${g.allocation?.gpuIds.join(',')}`, 'after']);
    expect(existsSync(go) && readFileSync(go, 'utf8')).toBe('');
    const back = resumeClaim(t.placement, g.claimId, g.resumeToken);
    expect((await back.granted).resumed).toBe(true);
    await back.release();
  });
});

describe('a claim with hold_ms on a worker', () => {
  it('resumed twice, still ends UNAVAILABLE "went away" when its worker leaves, and an awaiting one is dropped', async () => {
    const { t, next } = await gpuServer();
    const w = fakeWorker(t.worker, 'w1', { cpus: 2, gpuIds: [0, 1] }, ['gpu']);
    await w.welcomed;
    const ask = { cpus: 1, gpus: 1, label: 'gpu', policy: Policy.POLICY_REQUIRE, holdMs: 10_000 };
    const first = claim(t.placement, ask);
    const g = await first.granted;
    expect(g.machine).toBe('w1');
    let h = first;
    for (let i = 0; i < 2; i++) {
      const awaiting = next('claim_awaiting_holder');
      h.call.cancel();
      await awaiting;
      h = resumeClaim(t.placement, g.claimId, g.resumeToken);
      expect((await h.granted).allocation?.gpuIds).toEqual(g.allocation?.gpuIds);
    }
    const other = claim(t.placement, ask);
    const go = await other.granted;
    const awaiting = next('claim_awaiting_holder');
    other.call.cancel();
    await awaiting;
    w.close(); // the worker leaves: the held claim is lost, the awaiting one with it
    const e = await err(h);
    expect(e?.code).toBe(status.UNAVAILABLE);
    expect(e?.details).toContain('went away');
    await until(() => t.server.context.holds.leftMs(go.claimId) === undefined);
    expect((await err(resumeClaim(t.placement, go.claimId, go.resumeToken)))?.code).toBe(status.NOT_FOUND);
  });
});

describe('a claim registered as awaiting its holder (a journal restoring it after a restart)', () => {
  it('is resumed with its token, then given back when its stream ends if its own ask had no hold', async () => {
    const { t, next } = await gpuServer();
    const { placer, holds } = t.server.context;
    const grant = placer.claimOrWait(
      { cpus: 1, gpus: 1, label: '', policy: 'prefer', node: 'restored', runId: 'r', env: {} },
      { signal: () => new AbortController().signal },
    );
    if (grant instanceof Promise) throw new Error('expected a grant at once');
    const token = newResumeToken();
    holds.hold(grant, hashToken(token), 5_000);
    expect(holds.leftMs(grant.claimId)).toBeGreaterThan(4_000);
    expect((await err(resumeClaim(t.placement, grant.claimId, 'x'.repeat(22))))?.code).toBe(status.NOT_FOUND);
    const r = resumeClaim(t.placement, grant.claimId, token);
    const back = await r.granted;
    expect(back).toMatchObject({ claimId: grant.claimId, resumed: true, resumeToken: token });
    expect(back.allocation?.gpuIds).toEqual(grant.allocation.gpuIds);
    const released = next('claim_released');
    r.call.cancel(); // no hold_ms of its own: a broken stream gives it back, as for any claim without one
    expect((await released).claimId).toBe(grant.claimId);
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
  });
});

describe('a claim without hold_ms', () => {
  it('is given back at once when its stream is cancelled, as before (SPEC P8)', async () => {
    const { t, events, next } = await gpuServer();
    const { h, g } = await held(t.placement, 0);
    expect(g.resumeToken).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    const released = next('claim_released');
    h.call.cancel();
    expect(['stream_ended', 'half_closed']).toContain((await released).outcome); // a cancel may read as a half-close
    expect(events.some((e) => e.kind === 'claim_awaiting_holder')).toBe(false);
    expect((await err(resumeClaim(t.placement, g.claimId, g.resumeToken)))?.code).toBe(status.NOT_FOUND);
    expect(await freeOf(t.placement, engine(t))).toEqual({ cpus: 4, gpus: 4 });
  });
});
