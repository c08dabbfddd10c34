/**
 * A worker the server refuses stops with the server's message instead of retrying forever
 * (issue #2 finding 3), and a Hello that gets no Welcome is given up and retried.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { runBerth } from '../support/cli.js';
import { FakeHub } from '../support/fake-hub.js';
import { startServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('a refused worker', () => {
  it("berth worker whose Hello the server refuses (INVALID_ARGUMENT) exits 1 with the server's message", async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const r = await runBerth(['worker', '--server', s.address, '--name', 'engine', '--cpus', '1', '--gpus', '']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "berth worker: the server refused this worker: hello.name: 'engine' is the engine's name",
    );
  });

  it('an agent offering 4097 device ids gets a short refusal naming hello.inventory.gpu_ids and stops', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const gpuIds = Array.from({ length: 4097 }, (_, i) => i);
    const a = new WorkerAgent(
      {
        server: s.address,
        name: 'big',
        labels: [],
        inventory: { cpus: 1, gpuIds },
        maxParallel: 0,
        graceMs: 100,
        backoff: { baseMs: 20, capMs: 50 },
      },
      silentLogger,
    );
    open.push(() => a.stop());
    a.start();
    await a.finished;
    expect(a.fatal).toMatch(/^the server refused this worker: hello\.inventory\.gpu_ids: at most 4096 device ids/);
    expect(a.fatal!.length).toBeLessThan(300); // the id array is not echoed whole
    expect(a.status().attaches).toBe(0);
  });

  it('a Hello with no Welcome within the timeout is given up and sent again on a new stream', async () => {
    const hub = new FakeHub();
    const address = await hub.start();
    open.push(() => hub.stop());
    const a = new WorkerAgent(
      {
        server: address,
        name: 'w',
        labels: [],
        inventory: { cpus: 1, gpuIds: [] },
        maxParallel: 0,
        graceMs: 100,
        backoff: { baseMs: 20, capMs: 50 },
        welcomeTimeoutMs: 200,
      },
      silentLogger,
    );
    open.push(() => a.stop());
    a.start();
    await (await hub.connection(0)).waitFor('hello'); // never answered
    await (await hub.connection(1)).waitFor('hello');
    expect(a.fatal).toBeUndefined();
  });
});
