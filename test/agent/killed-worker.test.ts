/**
 * A `berth worker` SIGKILLed mid-run: its caller learns the worker went away because its stream
 * was cut — not "cancelled by client" (nobody cancelled anything).
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

describe('a worker killed mid-run', () => {
  it(
    'SIGKILL of the agent ends the Run UNAVAILABLE "worker w1 went away: its stream was cut", ' +
      'never "cancelled by client"',
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
        '2',
        '--gpus',
        '',
        '--log-level',
        'info',
      ]);
      const done = finished(child);
      open.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        return done;
      });
      await waitForLine(child, /attached to server/);
      const h = run(s.placement, runRequest({ label: 'w', argv: ['sh', '-c', 'echo $$; exec sleep 30'] }));
      await until(() => h.responses.some((r) => r.kind?.$case === 'event'));
      const ev = h.responses.find((r) => r.kind?.$case === 'event')?.kind;
      const pid = Number(ev?.$case === 'event' && ev.value.kind?.$case === 'log' ? ev.value.kind.value.line : NaN);
      open.push(() => {
        try {
          process.kill(-pid, 'SIGKILL'); // the orphaned sleep (its own process group)
        } catch {
          // gone already
        }
      });
      child.kill('SIGKILL');
      const o = await h.done;
      expect(o.error?.code).toBe(status.UNAVAILABLE);
      expect(o.error?.details).toContain('worker w1 went away: its stream was cut');
      expect(o.error?.details).not.toContain('cancelled by client');
    },
  );
});
