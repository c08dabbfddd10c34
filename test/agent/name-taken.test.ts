/**
 * Two live workers under one name (issue #2 finding 2): the newer one replaces the older (SPEC W1),
 * and the older, told FAILED_PRECONDITION "replaced by a new stream under the same name", exits 1
 * instead of reconnecting — no endless take-over in both directions.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { startServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function worker(address: string): ChildProcess {
  const child = spawnBerth(['worker', '--server', address, '--name', 'wa', '--cpus', '1', '--gpus', '']);
  open.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

describe('two live workers with one name', () => {
  it('berth worker: the first exits 1 saying its name was taken over; the second stays attached', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const replaced: string[] = [];
    s.server.context.events.subscribe((e) => {
      if (e.kind === 'worker_replaced') replaced.push(e.detail ?? '');
    });
    const first = worker(s.address);
    const firstDone = finished(first);
    await waitForLine(first, /attached to server/);
    const second = worker(s.address);
    const secondDone = finished(second);
    await waitForLine(second, /attached to server/);
    const r1 = await firstDone;
    expect(r1.code).toBe(1);
    expect(r1.stderr).toContain("berth worker: name 'wa' was taken over by another worker; not reconnecting");
    // The second stays: it is the one listed, and nothing replaced it since (the first did not come back).
    const snap = await snapshot(s.placement);
    expect(snap.machines.filter((m) => m.name === 'wa')).toHaveLength(1);
    expect(s.server.context.hub.workers.size).toBe(1);
    expect(replaced).toHaveLength(1);
    second.kill('SIGTERM');
    const r2 = await secondDone;
    expect(r2.code).toBe(0);
    expect(r2.stderr.match(/attached to server/g)).toHaveLength(1);
  });

  it('WorkerAgent: the replaced agent finishes with `fatal` set and never re-attaches', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const make = () => {
      const a = new WorkerAgent(
        {
          server: s.address,
          name: 'wa',
          labels: [],
          inventory: { cpus: 1, gpuIds: [] },
          maxParallel: 0,
          graceMs: 500,
          backoff: { baseMs: 20, capMs: 50 },
        },
        silentLogger,
      );
      open.push(() => a.stop());
      return a;
    };
    const a = make();
    const aAttached = a.nextAttach();
    a.start();
    await aAttached;
    const b = make();
    const bAttached = b.nextAttach();
    b.start();
    await bAttached;
    await a.finished;
    expect(a.fatal).toBe("name 'wa' was taken over by another worker; not reconnecting");
    expect(a.status().attaches).toBe(1);
    // a's loop is over (finished resolved), so it cannot take the name back: b keeps it.
    expect(b.status()).toMatchObject({ attached: true, attaches: 1 });
    expect(s.server.context.hub.workers.get('wa')).toBeDefined();
  });
});
