import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { healthClient, listServices } from '../support/grpc-std.js';
import { bearer, startServer, type TestServer } from '../support/server.js';

describe('a server that starts', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('lists both berth services and health through reflection, without proto files', async () => {
    t = await startServer();
    const names = await listServices(t.address);
    expect(names).toEqual(
      expect.arrayContaining(['berth.v1.PlacementService', 'berth.v1.WorkerService', 'grpc.health.v1.Health']),
    );
  });

  it('answers SERVING from the health service once started, for the server and each service', async () => {
    t = await startServer();
    const health = healthClient(t.address);
    try {
      for (const service of ['', 'berth.v1.PlacementService', 'berth.v1.WorkerService']) {
        const res = await new Promise<{ status: string }>((resolve, reject) =>
          health.check({ service }, (err, r) => (err ? reject(err) : resolve(r!))),
        );
        expect(res.status).toBe('SERVING');
      }
    } finally {
      health.close();
    }
  });

  it('binds an ephemeral port on loopback when asked for 127.0.0.1:0', async () => {
    t = await startServer();
    expect(t.server.port).toBeGreaterThan(0);
    expect(t.address).toBe(`127.0.0.1:${t.server.port}`);
    expect(t.server.state).toBe('serving');
  });

  it(
    'rejects a call without the token when BERTH_TOKEN is set ' + '(UNAUTHENTICATED), and accepts it with the token',
    async () => {
      t = await startServer({ flags: { token: 's3cret' } });
      const without = await new Promise<{ code: number; details: string }>((resolve) =>
        t!.placement.getSnapshot({}, (err) => resolve(err as unknown as { code: number; details: string })),
      );
      expect(without.code).toBe(status.UNAUTHENTICATED);
      expect(without.details).toMatch(/token/);
      const wrong = await new Promise<{ code: number }>((resolve) =>
        t!.placement.getSnapshot({}, bearer('nope'), (err) => resolve(err as unknown as { code: number })),
      );
      expect(wrong.code).toBe(status.UNAUTHENTICATED);
      const right = await new Promise<{ code?: number } | null>((resolve) =>
        t!.placement.getSnapshot({}, bearer('s3cret'), (err) => resolve(err)),
      );
      expect(right?.code).not.toBe(status.UNAUTHENTICATED);
    },
  );
});
