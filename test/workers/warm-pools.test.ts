/**
 * Issue #4 acceptance 13: the real `berth worker` process keeps warm Python pools keyed by env,
 * logs the pool count as it changes, and 100 sequential tiny nodes cost far less than 100
 * interpreter starts.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('warm Python pools of the real berth worker', () => {
  it(
    '13: same env reuses one pool, a different env adds exactly one; ' + '100 tiny nodes beat 100 interpreter starts',
    async () => {
      const s = await startServer({ cpus: 1 });
      open.push(() => s.close());
      const child = spawnBerth([
        'worker',
        '--server',
        s.address,
        '--name',
        'w1',
        '--labels',
        'w',
        '--cpus',
        '4',
        '--gpus',
        '',
        '--log-level',
        'info',
      ]);
      const done = finished(child);
      open.push(() => {
        child.kill('SIGTERM');
        return done;
      });
      await waitForLine(child, /attached to server/);
      const node = async (cpus: number, i = 0) => {
        const o = await run(
          s.placement,
          runRequest({
            node: `n${i}`,
            runId: `r${cpus}`,
            label: 'w',
            cpus,
            source: 'def process(i=0):\n    return i\n',
            kwargs: { i },
          }),
        ).done;
        expect(terminal(o)?.value).toMatchObject({ value: i });
      };
      await node(1);
      await node(1, 1);
      await node(2);
      child.kill('SIGTERM');
      const out = await done;
      const pools = [...out.stderr.matchAll(/"pools":(\d+)/g)].map((m) => Number(m[1]));
      expect(pools).toEqual([1, 2, 0]); // one pool, one more for the other env, closed on exit

      // Timing: 100 sequential tiny nodes through Run on a warm pool vs interpreter starts.
      const again = spawnBerth([
        'worker',
        '--server',
        s.address,
        '--name',
        'w2',
        '--labels',
        'v',
        '--cpus',
        '4',
        '--gpus',
        '',
        '--log-level',
        'warn',
      ]);
      const againDone = finished(again);
      open.push(() => {
        again.kill('SIGTERM');
        return againDone;
      });
      await until(async () => (await snapshotNames(s)).includes('w2'), 15_000, 50);
      const warmStart = performance.now();
      for (let i = 0; i < 100; i++) {
        const o = await run(
          s.placement,
          runRequest({
            node: `t${i}`,
            runId: 'tiny',
            label: 'v',
            source: 'def process(i):\n    return i\n',
            kwargs: { i },
          }),
        ).done;
        expect(terminal(o)?.value).toMatchObject({ value: i });
      }
      const warmMs = performance.now() - warmStart;
      // The real interpreter behind any shim (pyenv), so the comparison is not flattered.
      const python = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], {
        encoding: 'utf8',
      }).stdout.trim();
      const coldStart = performance.now();
      for (let i = 0; i < 10; i++) spawnSync(python, ['-c', 'pass']);
      const coldMs = ((performance.now() - coldStart) / 10) * 100;
      console.log(
        `100 tiny nodes via Run on a warm pool: ${warmMs.toFixed(0)} ms; ` +
          `100 starts of ${python} (extrapolated from 10): ${coldMs.toFixed(0)} ms`,
      );
      expect(warmMs).toBeLessThan(coldMs);
    },
  );
});

async function snapshotNames(s: Awaited<ReturnType<typeof startServer>>): Promise<string[]> {
  const r = await new Promise<{ machines: { name: string }[] }>((resolve, reject) =>
    s.placement.getSnapshot({}, (e, res) => (e ? reject(e) : resolve(res))),
  );
  return r.machines.map((m) => m.name);
}
