/**
 * A verbose node on the engine host: the process is paused while its caller lags (the call record
 * is the executors' Flow), so every line arrives in order and the call succeeds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { run, runRequest, terminal, outputLines } from '../support/run-client.js';
import { startServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('engine-host backpressure', () => {
  it('150 000 printed lines of a Python node on the engine host ' +
    'all arrive in order and the call succeeds', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const o = await run(
      s.placement,
      runRequest({ source: 'def process():\n    for i in range(150000):\n        print(i)\n    return "done"\n' }),
    ).done;
    expect(o.error).toBeNull();
    expect(o.responses[0].kind?.$case).toBe('started'); // no worker attached: it ran on the engine host
    let n = 0;
    let inOrder = true;
    for (const l of outputLines(o)) {
      if (l.line !== String(n)) inOrder = false;
      n++;
    }
    expect(n).toBe(150_000);
    expect(inOrder).toBe(true);
    expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: 'done' } });
  }, 120_000);
});
