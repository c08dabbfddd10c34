import { afterEach, describe, expect, it } from 'vitest';
import { healthClient } from '../support/grpc-std.js';
import { startServer, type TestServer } from '../support/server.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';

describe('shutdown', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it(
    'drains with an open WorkerStream and an open health Watch ' + 'within the grace; the watch sees NOT_SERVING',
    async () => {
      t = await startServer();
      const health = healthClient(t.address);
      const watch = health.watch({ service: '' });
      const seen: string[] = [];
      const servingSeen = new Promise<void>((resolve) =>
        watch.on('data', (m: { status: string }) => {
          seen.push(m.status);
          if (m.status === 'SERVING') resolve();
        }),
      );
      watch.on('error', () => {});
      const stream = t.worker.workerStream();
      stream.on('error', () => {});
      stream.on('data', () => {});
      await servingSeen;
      const graceMs = 1500;
      const started = Date.now();
      await t.server.stop(graceMs);
      const took = Date.now() - started;
      expect(took).toBeLessThan(graceMs + 1000);
      expect(t.server.state).toBe('stopped');
      expect(seen).toContain('NOT_SERVING');
      stream.cancel();
      watch.cancel();
      health.close();
    },
  );

  it('berth serve exits 0 on SIGTERM', async () => {
    const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--cpus', '2', '--gpus', '']);
    const done = finished(child);
    await waitForLine(child, /berth serving/);
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/berth stopped/);
  });

  it('berth serve still exits 0 on SIGTERM after whoever read its logs has gone away (EPIPE)', async () => {
    const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--cpus', '1']);
    await waitForLine(child, /berth serving/);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.stderr!.destroy();
    child.stdout!.destroy();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
