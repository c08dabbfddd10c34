/**
 * Placement details a new user tripped on (issue 23 item 7), through the real server: `--gpus 4`
 * is refused (it read as 4 GPUs but attached id 4), `4-4` and `4,` name the one id; Started says
 * fell_back as Granted does; a required label no machine carries is a Satisfiable verdict
 * (satisfiable.test.ts, test_queries.py); a 0-core machine is no clamping target.
 */
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { type SatisfiableResponse, Verdict } from '../../generated/ts/berth/v1/placement.js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { ask, claim, fakeWorker, watch } from '../support/claims.js';
import { finished, runBerth, spawnBerth } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { machine, snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

let t: TestServer | undefined;
const ends: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  await t?.close();
  t = undefined;
});

function verdictOf(s: TestServer, a: Partial<Ask>): Promise<SatisfiableResponse> {
  return new Promise((resolve, reject) =>
    s.placement.satisfiable({ ask: ask(a), group: undefined }, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

describe('--gpus takes ids, never a bare count', () => {
  it.each([
    ['worker', '4', 'for 4 GPUs write 0-3; for the one GPU with id 4 write 4-4'],
    ['serve', '4', 'for 4 GPUs write 0-3'],
    ['worker', '0', "for no GPUs write ''; for the one GPU with id 0 write 0-0"],
  ])('berth %s --gpus %s is refused (exit 2) with the hint', async (cmd, value, hint) => {
    const r = await runBerth([cmd, '--gpus', value, '--log-level', 'silent']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`berth: --gpus: a bare number is ambiguous: these are GPU ids, not a count: ${hint}`);
    expect(r.stderr).toContain(`(got "${value}")`);
  });

  it('BERTH_GPUS=4 is refused the same way', async () => {
    const r = await runBerth(['worker', '--log-level', 'silent'], { BERTH_GPUS: '4' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('BERTH_GPUS: a bare number is ambiguous');
  });

  it("a worker started with --gpus 4-4 or --gpus '4,' attaches the one GPU with id 4", async () => {
    t = await startServer({ cpus: 1, gpuIds: [] });
    const events = watch(t.placement);
    ends.push(async () => events.cancel());
    await events.ready;
    for (const [name, spec] of [
      ['w44', '4-4'],
      ['w4c', '4,'],
    ]) {
      const attached = events.next((e) => e.kind === 'worker_attached' && e.machine === name);
      const w = spawnBerth(['worker', '--server', t.address, '--name', name, '--cpus', '1', '--gpus', spec]);
      const done = finished(w);
      ends.push(async () => {
        w.kill('SIGTERM');
        await done;
      });
      await attached;
      expect(machine(await snapshot(t.placement), name).total?.gpuIds).toEqual([4]);
    }
  });
});

describe('Started says fell_back, as Granted does', () => {
  it('a prefer ask whose label no machine carries runs elsewhere with fell_back; a carried label without', async () => {
    t = await startServer({ cpus: 2, gpuIds: [], flags: { engineLabels: 'big' } });
    const started = async (label: string) => {
      const out = await run(t!.placement, runRequest({ cpus: 1, label, policy: 1, node: `n-${label}` })).done;
      expect(out.error).toBeNull();
      const s = out.responses.find((r) => r.kind?.$case === 'started')?.kind;
      return s?.$case === 'started' ? s.value : undefined;
    };
    expect(await started('tpu')).toMatchObject({ machine: 'engine', fellBack: true });
    expect(await started('big')).toMatchObject({ machine: 'engine', fellBack: false });
  });
});

describe('a machine with 0 cores is no clamping target', () => {
  it('serve --cpus 0, no worker: a 1-core ask fails FAILED_PRECONDITION naming ask.cpus; Satisfiable says so', async () => {
    t = await startServer({ cpus: 0, gpuIds: [0], flags: { reconnectGrace: 0 } });
    const c = claim(t.placement, { cpus: 1 });
    const err = await c.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toBe(
      'ask.cpus: asked 1 cpu(s) but no machine has cores (engine: 0) and no provisioner can start one: ' +
        'attach a worker with cores (berth worker --cpus N) or give the engine some (berth serve --cpus N)',
    );
    expect(await verdictOf(t, { cpus: 1 })).toMatchObject({ verdict: Verdict.VERDICT_IMPOSSIBLE, limiting: 'cpus' });
    const r = await run(t.placement, runRequest({ cpus: 1, argv: ['true'] })).done;
    expect(r.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(r.responses).toEqual([]); // nothing ran on the 0-core engine
    // an ask that needs no cores still runs on it (the GPU it has)
    const g = claim(t.placement, { cpus: 0, gpus: 1 });
    expect((await g.granted).machine).toBe('engine');
    await g.release();
    expect((await snapshot(t.placement)).held).toEqual([]);
  });

  it(
    'within the restart grace (no journal) it waits: a worker with cores that attaches takes it; with none it ' +
      'fails',
    async () => {
      // With the journal (the default) a first start has no restart grace (SPEC S6); without it, every start has one.
      t = await startServer({ cpus: 0, gpuIds: [], flags: { reconnectGrace: 1, journal: 'off' } });
      const taken = claim(t.placement, { cpus: 1, node: 'taken' });
      await taken.queued;
      expect((await verdictOf(t, { cpus: 1 })).verdict).toBe(Verdict.VERDICT_WAITS);
      const w = fakeWorker(t.worker, 'w1', { cpus: 2 });
      ends.push(async () => w.close());
      expect((await taken.granted).machine).toBe('w1');
      await taken.release();
      w.call.cancel(); // the worker goes: held for --worker-hold (SPEC S2), then gone
      await until(async () => !(await snapshot(t!.placement)).machines.some((m) => m.name === 'w1'));
      // no worker now: it fails (at once, or when the grace ends), never clamped to the 0-core engine
      const late = claim(t.placement, { cpus: 1, node: 'late' });
      const err = await late.ended;
      expect(err?.code).toBe(status.FAILED_PRECONDITION);
      expect(err?.details).toMatch(/^ask\.cpus: asked 1 cpu\(s\) but no machine has cores/);
    },
  );
});
