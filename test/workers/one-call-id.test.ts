/**
 * Issue 10 item 3: one call id, one execution. Two Runs with the same call id that both wait for a
 * busy worker: the second follows the first's placement instead of claiming again, the node runs
 * exactly once (it appends to a file each time it runs), both callers get its result, and no claim
 * is left behind (SPEC P8) — whether the grant would have come in one wake-up or one after the other.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { claim } from '../support/claims.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A server with one real agent `w1` (label w, `cpus` cores) attached. */
async function setup(cpus: number): Promise<TestServer> {
  const t = await startServer({ cpus: 1 });
  open.push(() => t.close());
  const a = new WorkerAgent(
    {
      server: t.address,
      name: 'w1',
      labels: ['w'],
      inventory: { cpus, gpuIds: [] },
      maxParallel: 0,
      graceMs: 2000,
      backoff: { baseMs: 100, capMs: 1000 },
    },
    silentLogger,
  );
  const attached = a.nextAttach();
  a.start();
  open.push(() => a.stop());
  await attached;
  return t;
}

/**
 * A blocker holds all `cpus` of w1; two Runs with call id `dup:f.n` (1 cpu each, require w) arrive;
 * the blocker lets go. Returns what the node's counter file and both callers saw.
 */
async function twoRunsOneId(cpus: number) {
  const t = await setup(cpus);
  const dir = mkdtempSync(join(tmpdir(), 'berth-once-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  const counter = join(dir, 'runs');
  const source =
    `def process():\n    with open(${JSON.stringify(counter)}, "a") as f:\n` +
    `        f.write("ran\\n")\n    return "once"\n`;
  const blocker = claim(t.placement, { cpus, label: 'w', policy: Policy.POLICY_REQUIRE });
  await blocker.granted;
  const req = runRequest({ runId: 'dup', flow: 'f', node: 'n', label: 'w', cpus: 1, source });
  const first = run(t.placement, req);
  await until(async () => (await snapshot(t.placement)).waiting.some((w) => w.runId === 'dup'));
  const second = run(t.placement, req);
  await until(() => t.server.context.hub.ids.following('dup:f.n') === 1); // it follows; it claimed nothing
  expect((await snapshot(t.placement)).waiting.filter((w) => w.runId === 'dup')).toHaveLength(1);
  await blocker.release();
  const [o1, o2] = await Promise.all([first.done, second.done]);
  const s = await snapshot(t.placement);
  return { t, o1, o2, ran: readFileSync(counter, 'utf8'), snap: s };
}

describe('one call id, one execution', () => {
  it(
    'two Runs with one call id waiting for a busy 2-cpu worker (room for both at once): the node runs once, ' +
      'both get its result, no claim left',
    async () => {
      const { t, o1, o2, ran, snap } = await twoRunsOneId(2);
      expect(o1.error).toBeNull();
      expect(o2.error).toBeNull();
      expect(terminal(o1)?.value).toMatchObject({ callId: 'dup:f.n', value: 'once' });
      expect(terminal(o2)?.value).toMatchObject({ callId: 'dup:f.n', value: 'once' });
      expect(ran).toBe('ran\n');
      await until(async () => (await snapshot(t.placement)).held.length === 0);
      expect(snap.waiting).toEqual([]);
      expect((await snapshot(t.placement)).machines.find((m) => m.name === 'w1')?.free?.cpus).toBe(2);
      expect(t.invariantErrors).toEqual([]);
    },
  );

  it(
    'two Runs with one call id waiting for a busy 1-cpu worker (room for one at a time): the node runs once, ' +
      'both get its result, no claim left',
    async () => {
      const { t, o1, o2, ran, snap } = await twoRunsOneId(1);
      expect(o1.error).toBeNull();
      expect(o2.error).toBeNull();
      expect(terminal(o1)?.value).toMatchObject({ callId: 'dup:f.n', value: 'once' });
      expect(terminal(o2)?.value).toMatchObject({ callId: 'dup:f.n', value: 'once' });
      expect(ran).toBe('ran\n');
      await until(async () => (await snapshot(t.placement)).held.length === 0);
      expect(snap.waiting).toEqual([]);
      expect((await snapshot(t.placement)).machines.find((m) => m.name === 'w1')?.free?.cpus).toBe(1);
      expect(t.invariantErrors).toEqual([]);
    },
  );

  it(
    'Cancel of the run while its call is being placed ends both ' + 'Runs CANCELLED; nothing is claimed again',
    async () => {
      const t = await setup(1);
      const blocker = claim(t.placement, { cpus: 1, label: 'w', policy: Policy.POLICY_REQUIRE });
      await blocker.granted;
      const req = runRequest({ runId: 'stop', flow: 'f', node: 'n', label: 'w', cpus: 1 });
      const first = run(t.placement, req);
      await until(async () => (await snapshot(t.placement)).waiting.some((w) => w.runId === 'stop'));
      const second = run(t.placement, req);
      await until(() => t.server.context.hub.ids.following('stop:f.n') === 1);
      const counts = await new Promise<{ calls: number; claims: number }>((resolve, reject) =>
        t.placement.cancel({ runId: 'stop' }, (e, r) => (e ? reject(e) : resolve(r))),
      );
      expect(counts).toEqual({ calls: 0, claims: 1 });
      const [o1, o2] = await Promise.all([first.done, second.done]);
      expect(o1.error?.code).toBe(status.CANCELLED);
      expect(o2.error?.code).toBe(status.CANCELLED);
      expect((await snapshot(t.placement)).waiting).toEqual([]);
      await blocker.release();
      expect(t.invariantErrors).toEqual([]);
    },
  );

  it(
    'when the first caller gives up while waiting, ' + 'the second Run places the call itself and it runs once',
    async () => {
      const t = await setup(1);
      const dir = mkdtempSync(join(tmpdir(), 'berth-once-'));
      open.push(() => rmSync(dir, { recursive: true, force: true }));
      const counter = join(dir, 'runs');
      const source =
        `def process():\n    with open(${JSON.stringify(counter)}, "a") as f:\n` +
        `        f.write("ran\\n")\n    return "second"\n`;
      const blocker = claim(t.placement, { cpus: 1, label: 'w', policy: Policy.POLICY_REQUIRE });
      await blocker.granted;
      const req = runRequest({ runId: 'gone', flow: 'f', node: 'n', label: 'w', cpus: 1, source });
      const first = run(t.placement, req);
      await until(async () => (await snapshot(t.placement)).waiting.some((w) => w.runId === 'gone'));
      const second = run(t.placement, req);
      await until(() => t.server.context.hub.ids.following('gone:f.n') === 1);
      first.cancel();
      await first.done;
      // the second claims now
      await until(async () => (await snapshot(t.placement)).waiting.some((w) => w.runId === 'gone'));
      await blocker.release();
      const o2 = await second.done;
      expect(terminal(o2)?.value).toMatchObject({ value: 'second' });
      expect(readFileSync(counter, 'utf8')).toBe('ran\n');
      await until(async () => (await snapshot(t.placement)).held.length === 0);
      expect(t.invariantErrors).toEqual([]);
    },
  );
});
