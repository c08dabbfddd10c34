/**
 * Issue: one node's big result, one huge output line or big kwargs must never drop the worker's
 * whole stream. A too-large result fails only its own call (ResultTooLarge), a huge line arrives
 * cut with a marker, kwargs of 5 MB go through — on the real agent over real gRPC.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { MAX_LINE, MAX_RESULT_BYTES } from '../../src/workers/executors/index.js';
import { cutMarker } from '../../src/workers/executors/lines.js';
import { run, runRequest, terminal, type RunOutcome, outputLines } from '../support/run-client.js';
import { startServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function setup() {
  const s = await startServer({ cpus: 1 });
  open.push(() => s.close());
  const a = new WorkerAgent(
    {
      server: s.address,
      name: 'w1',
      labels: ['w'],
      inventory: { cpus: 4, gpuIds: [] },
      maxParallel: 4,
      graceMs: 1000,
      backoff: { baseMs: 100, capMs: 1000 },
    },
    silentLogger,
  );
  const attached = a.nextAttach();
  a.start();
  open.push(() => a.stop());
  await attached;
  return { s, a };
}
function logLines(o: RunOutcome): string[] {
  return outputLines(o).map((l) => l.line);
}

describe('size limits on the real agent', () => {
  it(
    'a 6 MB result fails only its own call with ResultTooLarge; ' + 'a concurrent call on the same worker completes',
    async () => {
      const { s, a } = await setup();
      const dir = mkdtempSync(join(tmpdir(), 'berth-size-'));
      open.push(() => rmSync(dir, { recursive: true, force: true }));
      const go = join(dir, 'go');
      const waiting =
        'import os, time\ndef process(path):\n    while not os.path.exists(path):\n        time.sleep(0.02)\n' +
        '    return "still here"\n';
      const other = run(
        s.placement,
        runRequest({ runId: 'r-other', label: 'w', source: waiting, kwargs: { path: go } }),
      );
      const big = await run(
        s.placement,
        runRequest({ runId: 'r-big', label: 'w', source: "def process():\n    return 'y' * (6 * 1024 * 1024)\n" }),
      ).done;
      expect(big.error).toBeNull();
      const f = terminal(big);
      expect(f?.$case).toBe('failure');
      expect(f?.value).toMatchObject({ type: 'ResultTooLarge' });
      expect((f!.value as { message: string }).message).toContain(String(MAX_RESULT_BYTES));
      expect((f!.value as { message: string }).message).toMatch(/629\d{4} bytes/); // the size, about 6 MiB
      expect(a.status().attached).toBe(true);
      expect(existsSync(go)).toBe(false);
      writeFileSync(go, '');
      const o = await other.done;
      expect(o.error).toBeNull();
      expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: 'still here' } });
      expect(a.status().attaches).toBe(1); // the stream never dropped
    },
  );

  it(
    'a 1 MB single output line arrives cut to 64 KiB with a marker saying how many bytes were cut (print and a ' +
      'command)',
    async () => {
      const { s } = await setup();
      const printed = await run(
        s.placement,
        runRequest({
          runId: 'r-print',
          label: 'w',
          source: "def process():\n    print('x' * (1024 * 1024))\n    print('after')\n    return 1\n",
        }),
      ).done;
      expect(printed.error).toBeNull();
      const cut = 'x'.repeat(MAX_LINE) + cutMarker(1024 * 1024 - MAX_LINE);
      expect(logLines(printed)).toEqual([cut, 'after']);
      const command = await run(
        s.placement,
        runRequest({
          runId: 'r-cmd',
          label: 'w',
          argv: ['python3', '-c', "print('x' * (1024 * 1024)); print('after')"],
        }),
      ).done;
      expect(command.error).toBeNull();
      expect(logLines(command)).toEqual([cut, 'after']);
      expect(terminal(command)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    },
  );

  it('kwargs of 5 MB reach the node', async () => {
    const { s } = await setup();
    const text = 'k'.repeat(5 * 1024 * 1024);
    const o = await run(
      s.placement,
      runRequest({ label: 'w', source: 'def process(text):\n    return len(text)\n', kwargs: { text } }),
    ).done;
    expect(o.error).toBeNull();
    expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: 5 * 1024 * 1024 } });
  });
});

describe('metrics the server would refuse', () => {
  it(
    'report("", 1) and a 300-character name become stderr lines; ' + 'the worker stays attached and the call succeeds',
    async () => {
      const { s, a } = await setup();
      const source = 'def process():\n    report("", 1)\n    report("n" * 300, 2)\n    report("ok", 3)\n    return 1\n';
      const o = await run(s.placement, runRequest({ label: 'w', source })).done;
      expect(o.error).toBeNull();
      const lines = logLines(o);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toContain('metric dropped (its name is empty)');
      expect(lines[1]).toContain('metric dropped (its name is longer than 256 characters)');
      expect(
        o.responses.some(
          (r) =>
            r.kind?.$case === 'event' && r.kind.value.kind?.$case === 'metric' && r.kind.value.kind.value.name === 'ok',
        ),
      ).toBe(true);
      expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: 1 } });
      expect(a.status().attaches).toBe(1);
    },
  );
});
