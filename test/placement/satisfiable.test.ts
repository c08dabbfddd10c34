import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import {
  type PlacementServiceClient,
  type SatisfiableResponse,
  Verdict,
} from '../../generated/ts/berth/v1/placement.js';
import { ask, claim, fakeWorker } from '../support/claims.js';
import { testProvisioner } from '../support/provisioner.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

function satisfiable(client: PlacementServiceClient, a: Partial<Ask> | undefined): Promise<string> {
  return new Promise((resolve, reject) =>
    client.satisfiable({ ask: a && ask(a), group: undefined }, (err, res) =>
      err ? reject(err) : resolve(res!.waitFor),
    ),
  );
}

function verdictOf(client: PlacementServiceClient, a: Partial<Ask>): Promise<SatisfiableResponse> {
  return new Promise((resolve, reject) =>
    client.satisfiable({ ask: ask(a), group: undefined }, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

describe('Satisfiable and provisioners (SPEC P10)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('engine 4 cpus, no provisioner: everything can run now or after clamping', async () => {
    t = await startServer({ cpus: 4 });
    expect(await satisfiable(t.placement, {})).toBe('');
    expect(await satisfiable(t.placement, undefined)).toBe('');
    expect(await satisfiable(t.placement, { cpus: 2 })).toBe('');
    expect(await satisfiable(t.placement, { cpus: 1, gpus: 1 })).toBe('');
  });

  it('with a provisioner covering up to 2 GPUs: a GPU ask waits for it; a CPU ask does not', async () => {
    const prov = testProvisioner({ cpus: 16, gpus: 2, ramMb: 65536, labels: [] });
    t = await startServer({ cpus: 4, provisioning: prov.make });
    expect(await satisfiable(t.placement, { cpus: 1, gpus: 1 })).toBe('1 gpu(s) and 1 cpu(s)');
    expect(await satisfiable(t.placement, { cpus: 1, gpus: 0 })).toBe('');
    expect((await snapshot(t.placement)).provisioners.map((p) => p.name)).toEqual(['test']);
  });

  it('an ask a provisioner covers waits for the machine it starts instead of being clamped', async () => {
    const prov = testProvisioner({ cpus: 16, gpus: 2, ramMb: 65536, labels: [] });
    t = await startServer({ cpus: 4, provisioning: prov.make });
    const c = claim(t.placement, { cpus: 1, gpus: 1, node: 'wants.gpu' });
    const q = await c.queued;
    expect(q.detail).toBe('1 gpu(s) and 1 cpu(s)');
    expect(prov.backend.requests).toEqual([{ cpus: 16, gpus: 2, ramMb: 65536, labels: [] }]);
    const w = fakeWorker(t.worker, 'prov-1', { cpus: 16, gpuIds: [0, 1], ramMb: 65536 });
    const g = await c.granted;
    expect(g.machine).toBe('prov-1');
    expect(g.clamped).toBe(false);
    await c.release();
    w.close();
  });

  it('while the server drains it answers UNAVAILABLE "server is draining", as a Claim would', async () => {
    t = await startServer({ cpus: 4 });
    const held = claim(t.placement, { cpus: 1, node: 'keeps.the.drain.going' });
    await held.granted;
    const stopped = t.server.stop(30_000);
    const err = await satisfiable(t.placement, { cpus: 1 }).catch((e: ServiceError) => e);
    expect((err as ServiceError).code).toBe(status.UNAVAILABLE);
    expect((err as ServiceError).details).toBe('server is draining');
    await held.release();
    await stopped;
  });

  it('a required label no machine carries is a verdict, IMPOSSIBLE limited by "label"; its Claim fails naming it', async () => {
    t = await startServer({ cpus: 4, flags: { reconnectGrace: 0 } });
    const v = await verdictOf(t.placement, { label: 'tpu', policy: 2 });
    expect(v).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'label', waitFor: '' });
    expect(v.clampedTo).toBeUndefined();
    const c = claim(t.placement, { cpus: 1, label: 'tpu', policy: 2 });
    const err = await c.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toContain("'tpu'");
    // a preferred label no machine carries runs now elsewhere
    expect((await verdictOf(t.placement, { label: 'tpu', policy: 1 })).verdict).toBe(Verdict.VERDICT_RUNS_NOW);
  });

  it('a required label whose worker left within the reconnect grace waits for it to come back', async () => {
    t = await startServer({ cpus: 4 });
    const w = fakeWorker(t.worker, 'tpu1', { cpus: 4 }, ['tpu']);
    await w.welcomed;
    w.close();
    await w.ended;
    const c = claim(t.placement, { cpus: 1, label: 'tpu', policy: 2 });
    await c.queued;
    const back = fakeWorker(t.worker, 'tpu1', { cpus: 4 }, ['tpu']);
    expect((await c.granted).machine).toBe('tpu1');
    await c.release();
    back.close();
  });

  it(
    'after the reconnect grace, a claim still waiting for a required ' + 'label fails FAILED_PRECONDITION naming it',
    async () => {
      t = await startServer({ cpus: 4, flags: { reconnectGrace: 1 } });
      const w = fakeWorker(t.worker, 'tpu1', { cpus: 4 }, ['tpu']);
      await w.welcomed;
      w.close();
      await w.ended;
      const c = claim(t.placement, { cpus: 1, label: 'tpu', policy: 2 });
      await c.queued;
      const err = await c.ended;
      expect(err?.code).toBe(status.FAILED_PRECONDITION);
      expect(err?.details).toContain("'tpu'");
      expect((await snapshot(t.placement)).waiting).toEqual([]);
    },
  );
});
