/**
 * A call printing a lot: every line reaches the caller, in order (SPEC W2), through the real agent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { run, runRequest, terminal, outputLines } from '../support/run-client.js';
import { startServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('heavy output', () => {
  it('20 000 output lines of a command all reach the caller in order', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const agent = new WorkerAgent(
      {
        server: s.address,
        name: 'w1',
        labels: ['w'],
        inventory: { cpus: 2, gpuIds: [] },
        maxParallel: 0,
        graceMs: 1000,
      },
      silentLogger,
    );
    const attached = agent.nextAttach();
    agent.start();
    open.push(() => agent.stop());
    await attached;
    const o = await run(s.placement, runRequest({ label: 'w', argv: ['seq', '1', '20000'] })).done;
    expect(o.error).toBeNull();
    const lines = outputLines(o).map((l) => l.line);
    expect(lines).toHaveLength(20000);
    expect(lines.every((l, i) => l === String(i + 1))).toBe(true);
    expect(terminal(o)?.value).toMatchObject({ value: { exit_code: 0 } });
  });
});
