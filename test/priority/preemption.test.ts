/**
 * Bounded preemption through the real server over gRPC (SPEC Q2, issue 22 item 2): a claim of a class that may
 * preempt, which cannot be placed, takes the fewest strictly lower claims on one machine where that makes it fit; the
 * victim's holder hears Preempting with the grace and berth releases it when the grace runs out: by default it waits
 * again at its place on the same stream (requeue), with `on_preempt: cancel` its stream ends ABORTED; the room is
 * reserved for the preemptor meanwhile and freed at once when it leaves; nothing is evicted where it would not help,
 * and `preemption: never` classes and bare priorities never evict.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/render-status.js';
import { OnPreempt, Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim, fakeWorker, watch, type ClaimHandle, type FakeWorker } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { run, runRequest } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

let t: TestServer | undefined;
let dir: string | undefined;
const open: ClaimHandle[] = [];
const workers: FakeWorker[] = [];
const watches: { cancel(): void }[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.call.cancel();
  for (const w of workers.splice(0)) w.close();
  for (const w of watches.splice(0)) w.cancel();
  await t?.close();
  t = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const CLASSES = `priority_classes:
  urgent: { value: 100 }
  steady: { value: 50, preemption: never }
  batch: { value: 0, default: true }
`;

/** Starts a server with the classes above, `preemptionGrace` seconds and the engine inventory given. */
async function serve(
  engine: { cpus: number; gpuIds?: number[] },
  preemptionGrace: number,
  flags: Record<string, unknown> = {},
): Promise<TestServer> {
  dir = mkdtempSync(join(tmpdir(), 'berth-preempt-'));
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, CLASSES);
  return startServer({ ...engine, flags: { config, preemptionGrace, ...flags } });
}

const held = (a: Parameters<typeof claim>[1]) => {
  const c = claim(t!.placement, a);
  open.push(c);
  return c;
};

const gotNotice = (c: ClaimHandle) => c.responses.some((r) => r.kind?.$case === 'preempting');

describe('bounded preemption (SPEC Q2)', () => {
  it('fewest victims: on 8 GPUs held as 2+2+4, an urgent 4-GPU ask preempts only the 4; released in the grace, the urgent claim gets its GPUs', async () => {
    t = await serve({ cpus: 16, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] }, 60);
    const a = held({ cpus: 1, gpus: 2, node: 'a' });
    const b = held({ cpus: 1, gpus: 2, node: 'b' });
    const c = held({ cpus: 1, gpus: 4, node: 'c' });
    const gc = await c.granted;
    await Promise.all([a.granted, b.granted]);

    const urgent = held({ cpus: 1, gpus: 4, node: 'u', priorityClass: 'urgent' });
    const q = await urgent.queued;
    expect(q.detail).toMatch(/preempting 1 lower-priority claim on engine \(grace 60 s\)/);
    const notice = await c.preempting;
    expect(notice).toMatchObject({ byPriority: 100, graceMs: 60_000, machine: 'engine' });
    expect(notice.detail).toContain(`claim ${gc.claimId} (priority 0) on engine preempted by claim`);
    expect(gotNotice(a) || gotNotice(b)).toBe(false);
    const during = await snapshot(t.placement); // GetSnapshot and `berth status` show who is being preempted
    const victim = during.held.find((h) => h.claimId === gc.claimId)!;
    expect(victim.preemptedBy).toBe(notice.byClaimId);
    expect(victim.preemptLeftMs).toBeGreaterThan(50_000);
    expect(during.held.filter((h) => h.preemptedBy)).toHaveLength(1);
    expect(renderStatus(during)).toMatch(new RegExp(`PREEMPTED[\\s\\S]*by ${notice.byClaimId}, \\d+(\\.\\d)?s left`));

    await c.release(); // the holder gives it back within the grace: the stream ends OK with Released
    const gu = await urgent.granted;
    expect(gu.allocation?.gpuIds).toEqual(gc.allocation?.gpuIds);
    expect(notice.byClaimId).toBe(gu.claimId);
    const s = await snapshot(t.placement);
    expect(s.held.map((h) => h.node).sort()).toEqual(['a', 'b', 'u']);
  });

  it('on_preempt cancel: a victim not given back in the grace is released by berth, its stream ends ABORTED naming the preemptor', async () => {
    t = await serve({ cpus: 2 }, 0.2);
    const events = watch(t.placement);
    watches.push(events);
    await events.ready;
    const low = held({ cpus: 2, node: 'low', onPreempt: OnPreempt.ON_PREEMPT_CANCEL });
    const gl = await low.granted;
    const urgent = held({ cpus: 2, node: 'u', priorityClass: 'urgent' });
    const gu = await urgent.granted; // once the grace ran out
    const err = await low.ended;
    expect(err?.code).toBe(status.ABORTED);
    expect(err?.details).toBe(`claim ${gl.claimId} released (preempted by claim ${gu.claimId} of priority 100)`);
    const preempted = events.seen.find((e) => e.kind === 'claim_preempted');
    expect(preempted).toMatchObject({ claimId: gl.claimId, machine: 'engine' });
    const released = events.seen.find((e) => e.kind === 'claim_released' && e.claimId === gl.claimId);
    expect(released?.outcome).toBe('preempted'); // given back before the urgent grant was made
  });

  it('requeue (the default): a victim not given back in the grace waits again on its stream and is granted again when the room returns', async () => {
    t = await serve({ cpus: 2 }, 0.2);
    const events = watch(t.placement);
    watches.push(events);
    await events.ready;
    const low = held({ cpus: 2, node: 'low' });
    const gl = await low.granted;
    const urgent = held({ cpus: 2, node: 'u', priorityClass: 'urgent' });
    const gu = await urgent.granted; // once the grace ran out
    const q = await low.requeued;
    expect(q.detail).toMatch(
      new RegExp(`^preempted by claim ${gu.claimId} of priority 100; waiting again at its place: `),
    );
    expect(q.claimId).not.toBe(gl.claimId); // the claim waits again under a new id
    const released = events.seen.find((e) => e.kind === 'claim_released' && e.claimId === gl.claimId);
    expect(released?.outcome).toBe('preempted');
    const waiting = (await snapshot(t.placement)).waiting;
    expect(waiting.map((w) => w.node)).toEqual(['low']);
    expect(waiting[0].reason).toMatchObject({ requeued: true, claimId: q.claimId }); // GetSnapshot says so too
    expect(waiting[0].reason?.detail).toMatch(/^preempted by claim \S+ of priority 100; waiting again at its place: /);
    expect(renderStatus(await snapshot(t.placement))).toContain('waiting again at its place');

    await urgent.release(); // the room returns: the requeued claim gets it on the same stream
    const again = await low.regranted;
    expect(again.claimId).toBe(q.claimId);
    expect(again.machine).toBe('engine');
    expect(again.resumeToken).not.toBe(gl.resumeToken);
    expect((await snapshot(t.placement)).held.map((h) => h.claimId)).toEqual([again.claimId]);
    await low.release(); // it is an ordinary lease again: Release is answered by Released
    expect(low.responses.at(-1)?.kind?.$case).toBe('released');
  });

  it('requeue keeps the original place: the victim is granted before a claim of its priority that came after it', async () => {
    t = await serve({ cpus: 2 }, 0.2);
    const low = held({ cpus: 2, node: 'first' });
    await low.granted;
    const later = held({ cpus: 2, node: 'later' });
    await later.queued;
    const urgent = held({ cpus: 2, node: 'u', priorityClass: 'urgent' });
    await urgent.granted;
    expect((await low.requeued).position).toBe(2); // behind its preemptor, ahead of the later claim
    const order = (await snapshot(t.placement)).waiting.map((w) => w.node);
    expect(order).toEqual(['first', 'later']); // back ahead of the one that came after it, behind its preemptor
    await urgent.release();
    await low.regranted;
    const s = await snapshot(t.placement);
    expect(s.held.map((h) => h.node)).toEqual(['first']);
    expect(s.waiting.map((w) => w.node)).toEqual(['later']);
  });

  it('Release with requeue after the notice gives the room back at once and waits again; without a notice it is refused naming the field', async () => {
    t = await serve({ cpus: 4 }, 60);
    const low = held({ cpus: 4, node: 'low' });
    await low.granted;
    const early = held({ cpus: 0, node: 'early' }); // 0 cores: granted at once, never preempted
    await early.granted;
    early.makeRoom();
    const refused = await early.ended;
    expect(refused?.code).toBe(status.INVALID_ARGUMENT);
    expect(refused?.details).toMatch(/^release\.requeue: claim \S+ is not being preempted/);

    const urgent = held({ cpus: 4, node: 'u', priorityClass: 'urgent' });
    await low.preempting;
    low.makeRoom(); // checkpointed: the room goes to the preemptor now, not after 60 s
    const gu = await urgent.granted;
    const q = await low.requeued;
    expect(q.detail).toContain(`preempted by claim ${gu.claimId}`);
    expect(low.responses.some((r) => r.kind?.$case === 'released')).toBe(false);
    low.makeRoom(); // late or twice: it waits again already, nothing changes
    expect((await snapshot(t.placement)).waiting.map((w) => w.node)).toEqual(['low']); // still waiting, stream open
    urgent.call.end(); // the preemptor half-closes: the requeued claim is granted again
    expect((await low.regranted).machine).toBe('engine');
  });

  it('a plain Release while the claim waits again gives it up and is answered by Released', async () => {
    t = await serve({ cpus: 2 }, 0.2);
    const low = held({ cpus: 2, node: 'low' });
    await low.granted;
    const urgent = held({ cpus: 2, node: 'u', priorityClass: 'urgent' });
    await urgent.granted;
    const q = await low.requeued;
    await low.release();
    const last = low.responses.at(-1)?.kind;
    expect(last?.$case === 'released' && last.value.claimId).toBe(q.claimId);
    expect((await snapshot(t.placement)).waiting).toEqual([]);
  });

  it('a requeued victim whose stream ends while it waits again leaves the queue', async () => {
    t = await serve({ cpus: 2 }, 0.2);
    const low = held({ cpus: 2, node: 'low' });
    await low.granted;
    const urgent = held({ cpus: 2, node: 'u', priorityClass: 'urgent' });
    await urgent.granted;
    await low.requeued;
    low.call.end(); // half-close while waiting again: nothing to give back, the stream ends OK
    expect(await low.ended).toBeNull();
    await until(async () => (await snapshot(t!.placement)).waiting.length === 0);
    await urgent.release();
    expect((await snapshot(t.placement)).held).toEqual([]);
  });

  it('during the grace the room is reserved: 100 lower asks take none of it; once the preemptor leaves they do', async () => {
    t = await serve({ cpus: 4 }, 60);
    const victim = held({ cpus: 2, node: 'victim' });
    await victim.granted; // 2 of 4 cores held, 2 free
    const urgent = held({ cpus: 4, node: 'u', priorityClass: 'urgent' });
    await victim.preempting;
    const lows = Array.from({ length: 100 }, (_, i) => held({ cpus: 1, node: `low.${i}` }));
    await Promise.all(lows.map((l) => l.queued)); // the 2 free cores are the preemptor's
    expect((await snapshot(t.placement)).held.map((h) => h.node)).toEqual(['victim']);

    urgent.call.cancel(); // the preemptor leaves: its reservation goes at once
    await Promise.all([lows[0].granted, lows[1].granted]);
    expect(lows.slice(2).some((l) => l.responses.some((r) => r.kind?.$case === 'granted'))).toBe(false);
  });

  it('placement-aware: with 6 urgent and 2 batch 1-GPU claims on each of 4 machines, an urgent 8-GPU ask evicts nobody and says why; an urgent 1-GPU ask after it gets a batch GPU', async () => {
    t = await serve({ cpus: 1 }, 60);
    const names = ['m0', 'm1', 'm2', 'm3'];
    for (const name of names) {
      const w = fakeWorker(t.worker, name, { cpus: 16, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7] }, [name]);
      workers.push(w);
      await w.welcomed;
    }
    const batch: ClaimHandle[] = [];
    for (const name of names) {
      for (let i = 0; i < 6; i++)
        await held({
          gpus: 1,
          label: name,
          policy: Policy.POLICY_REQUIRE,
          node: `hi.${name}.${i}`,
          priorityClass: 'urgent',
        }).granted;
      for (let i = 0; i < 2; i++) {
        const b = held({ gpus: 1, label: name, policy: Policy.POLICY_REQUIRE, node: `lo.${name}.${i}` });
        await b.granted;
        batch.push(b);
      }
    }
    const big = held({ gpus: 8, node: 'big', priorityClass: 'urgent' });
    const qb = await big.queued;
    expect(qb.detail).toContain('preempting nothing: on no machine would giving back lower-priority claims make room');
    expect(batch.some(gotNotice)).toBe(false);

    const one = held({ gpus: 1, node: 'one', priorityClass: 'urgent' });
    const qo = await one.queued;
    expect(qo.detail).toMatch(/preempting 1 lower-priority claim on m[0-3]/);
    const told = await Promise.race(batch.map((b) => b.preempting.then(() => b)));
    await told.release(); // an engine that checkpoints and gives back in its grace
    const g = await one.granted;
    expect(qo.detail).toContain(`on ${g.machine}`);
    expect(batch.filter(gotNotice)).toHaveLength(1);
  });

  it('a `preemption: never` class and a bare priority wait without evicting anything', async () => {
    t = await serve({ cpus: 2 }, 60);
    const events = watch(t.placement);
    watches.push(events);
    await events.ready;
    const low = held({ cpus: 2, node: 'low' });
    await low.granted;
    const steady = held({ cpus: 2, node: 'steady', priorityClass: 'steady' });
    const bare = held({ cpus: 2, node: 'bare', priority: 1000 });
    const [qs, qb] = await Promise.all([steady.queued, bare.queued]);
    expect(qs.detail).not.toContain('preempting');
    expect(qb.detail).not.toContain('preempting');
    if (!events.seen.some((e) => e.kind === 'node_queued' && e.node === 'bare'))
      await events.next((e) => e.kind === 'node_queued' && e.node === 'bare');
    expect(events.seen.some((e) => e.kind === 'claim_preempted')).toBe(false); // it would come before node_queued
    expect(gotNotice(low)).toBe(false);
    await low.release();
    expect((await bare.granted).machine).toBe('engine'); // priority 1000 goes first, once room is given back
  });

  it("a Run's own claim is a victim too: its caller hears Preempting, at the grace's end its process is stopped and the Run ends ABORTED", async () => {
    t = await serve({ cpus: 1 }, 0.2);
    const r = run(t.placement, runRequest({ cpus: 1, argv: ['sleep', '30'], node: 'sweep' }));
    await until(() => r.responses.some((x) => x.kind?.$case === 'started'));
    const urgent = held({ cpus: 1, node: 'u', priorityClass: 'urgent' });
    const gu = await urgent.granted;
    const out = await r.done;
    expect(out.error?.code).toBe(status.ABORTED);
    expect(out.error?.details).toMatch(new RegExp(`preempted by claim ${gu.claimId} of priority 100`));
    const heard = out.responses.find((x) => x.kind?.$case === 'preempting')?.kind;
    expect(heard?.$case === 'preempting' && heard.value).toMatchObject({ byClaimId: gu.claimId, graceMs: 200 });
    expect((await snapshot(t.placement)).held.map((h) => h.node)).toEqual(['u']);
  });

  it('a Run with max_retries is placed again when preempted: Retrying names the preemption, attempt 2 runs after', async () => {
    t = await serve({ cpus: 1 }, 0.2);
    const r = run(t.placement, runRequest({ cpus: 1, argv: ['sleep', '30'], node: 'sweep', maxRetries: 1 }));
    await until(() => r.responses.some((x) => x.kind?.$case === 'started'));
    const urgent = held({ cpus: 1, node: 'u', priorityClass: 'urgent' });
    const gu = await urgent.granted;
    await until(() => r.responses.some((x) => x.kind?.$case === 'retrying'));
    const retrying = r.responses.find((x) => x.kind?.$case === 'retrying')!.kind;
    expect(retrying?.$case === 'retrying' && retrying.value.reason).toMatch(`preempted by claim ${gu.claimId}`);
    expect((await snapshot(t.placement)).waiting.map((w) => w.node)).toEqual(['flow.sweep']); // waits its turn
    await urgent.release();
    await until(() => r.responses.filter((x) => x.kind?.$case === 'started').length === 2);
    r.cancel();
    expect((await r.done).error?.code).toBe(status.CANCELLED);
  });

  it('--preemption-min-runtime: a young claim is not preempted yet; the preemptor looks again and takes it once old enough', async () => {
    t = await serve({ cpus: 1 }, 60, { preemptionMinRuntime: 0.5 });
    const low = held({ cpus: 1, node: 'low' });
    await low.granted;
    const urgent = held({ cpus: 1, node: 'u', priorityClass: 'urgent' });
    const first = await urgent.queued;
    expect(first.detail).toContain('preempting nothing yet: 1 lower-priority claim(s) held less than the minimum');
    const notice = await low.preempting; // a later look, once `low` is held 0.5 s
    expect(notice.byClaimId).toBe(first.claimId);
    const queued = () => urgent.responses.flatMap((r) => (r.kind?.$case === 'queued' ? [r.kind.value] : []));
    await until(() => queued().length >= 2); // the preemptor's own stream hears it in a fresh Queued
    expect(queued().at(-1)?.detail).toMatch(/preempting 1 lower-priority claim on engine/);
    await low.release();
    expect((await urgent.granted).machine).toBe('engine');
  });
});
