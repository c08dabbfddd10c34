/**
 * Issue 10 item 10 and issue 19 item 7 (SPEC P3, S6): after a restart, a `require` ask for the label of a
 * worker the journal knows waits for that worker to come back (Queued says so) for `--restart-hold`, instead
 * of failing FAILED_PRECONDITION; after the hold (and the reconnect grace) it fails as before. An empty
 * state dir is a first start: a label nobody ever attached fails at once.
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { claim } from '../support/claims.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, tempStateDir } from '../support/server.js';
import { TestWorker } from '../support/test-worker.js';
import { rmSync } from 'node:fs';
import { snapshot } from '../support/snapshot.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function until(cond: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('restart grace for required labels', () => {
  it(
    'after a restart, a Run and a Claim requiring the label of a journaled worker not yet back wait for it ' +
      'instead of failing, then run there',
    async () => {
      const stateDir = tempStateDir();
      open.push(() => rmSync(stateDir, { recursive: true, force: true }));
      const s1 = await startServer({ cpus: 1, flags: { stateDir } });
      const port = s1.server.port;
      const agentOn = (address: string) => {
        const a = new WorkerAgent(
          {
            server: address,
            name: 'w1',
            labels: ['w'],
            inventory: { cpus: 2, gpuIds: [] },
            maxParallel: 0,
            graceMs: 1000,
            backoff: { baseMs: 100, capMs: 1000 },
          },
          silentLogger,
        );
        const attached = a.nextAttach();
        a.start();
        open.push(() => a.stop());
        return attached.then(() => a);
      };
      const before = await agentOn(s1.address);
      await s1.close(200); // the server restarts; its journal knows w1
      await before.stop(); // the worker's host is down too; it comes back later
      const s2 = await startServer({ cpus: 1, flags: { listen: `127.0.0.1:${port}`, stateDir } });
      open.push(() => s2.close());
      // The server came back before its worker (the agent here is stopped until the asks wait).
      const c = claim(s2.placement, { cpus: 1, label: 'w', policy: Policy.POLICY_REQUIRE });
      const r = run(
        s2.placement,
        runRequest({ runId: 'after-restart', label: 'w', source: 'def process():\n    return "back"\n' }),
      );
      const q = await c.queued;
      expect(q.detail).toContain('waiting for w1 to come back (restart hold');
      await until(async () => (await snapshot(s2.placement)).waiting.length === 2);
      await agentOn(s2.address);
      expect((await c.granted).machine).toBe('w1');
      await c.release();
      const o = await r.done;
      expect(o.error).toBeNull();
      expect(terminal(o)?.value).toMatchObject({ value: 'back' });
      expect(o.responses[0].kind).toMatchObject({ $case: 'started', value: { machine: 'w1' } });
    },
  );

  it(
    'a journaled label whose worker does not come back within the restart hold fails FAILED_PRECONDITION ' +
      'naming it once the hold and the reconnect grace are over, and nothing waits',
    async () => {
      const stateDir = tempStateDir();
      open.push(() => rmSync(stateDir, { recursive: true, force: true }));
      const s1 = await startServer({ cpus: 1, flags: { stateDir } });
      const w = await TestWorker.attach(s1.address, { name: 'tpu-1', labels: ['tpu'] });
      await s1.close(200);
      w.close();
      const t = await startServer({ cpus: 1, flags: { stateDir, restartHold: 1, reconnectGrace: 0.5 } });
      open.push(() => t.close());
      const c = claim(t.placement, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
      expect((await c.queued).detail).toContain('waiting for tpu-1 to come back (restart hold');
      const err = await c.ended;
      expect(err?.code).toBe(status.FAILED_PRECONDITION);
      expect(err?.details).toContain("'tpu'");
      expect((await snapshot(t.placement)).waiting).toEqual([]);
      // Past the hold and the grace, the same ask fails at once, as it always did.
      const again = claim(t.placement, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
      expect((await again.ended)?.code).toBe(status.FAILED_PRECONDITION);
      expect(again.responses).toEqual([]);
    },
  );

  it('a first start (empty state dir) fails a required label nobody ever attached at once, whatever the grace', async () => {
    const t = await startServer({ cpus: 1, flags: { reconnectGrace: 20 } });
    open.push(() => t.close());
    const c = claim(t.placement, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
    const err = await c.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toContain("no machine carries label 'tpu'");
    expect(c.responses).toEqual([]); // no Queued: it never waited
  });

  it('with --reconnect-grace 0 a required label no machine carries fails at once', async () => {
    const t = await startServer({ cpus: 1, flags: { reconnectGrace: 0 } });
    open.push(() => t.close());
    const o = await run(t.placement, runRequest({ label: 'tpu' })).done;
    expect(o.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(o.error?.details).toContain("'tpu'");
  });
});
