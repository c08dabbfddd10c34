/**
 * Issue 19 items 3 and 10 (SPEC S3, R3, R7): claims awaiting their holder are visible — decision log
 * lines and metrics of a real `berth serve` (with the resume token in no line), `berth status` —
 * only their owner takes them back when client identities are configured, and the drain ends
 * them like held leases (kept for the grace, then given back 'server draining').
 */
import { credentials, InterceptingCall, status, type Interceptor } from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim, resumeClaim, watch } from '../support/claims.js';
import { finished, runBerth, spawnBerth, waitForLine } from '../support/cli.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

type Line = Record<string, unknown> & { event?: string; msg: string };

describe('claims awaiting their holder, seen from outside', () => {
  it('leave decision log lines and metrics, show in berth status, and never print their token', async () => {
    const child = spawnBerth([
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--cpus',
      '2',
      '--gpus',
      '0,1',
      '--metrics-listen',
      '127.0.0.1:0',
    ]);
    const done = finished(child);
    open.push(() => void child.kill('SIGKILL'));
    const pageLine = waitForLine(child, /status page and metrics/); // logged just before "berth serving"
    const serving = JSON.parse(await waitForLine(child, /berth serving/)) as { address: string };
    const page = JSON.parse(await pageLine) as { metrics: string };
    const placement = new PlacementServiceClient(serving.address, credentials.createInsecure());
    open.push(() => placement.close());
    const w = watch(placement);
    await w.ready;
    open.push(() => w.cancel());

    const a = claim(placement, { cpus: 1, gpus: 1, holdMs: 20_000, node: 'f.kept' });
    const ga = await a.granted;
    a.call.cancel();
    await w.next((e) => e.kind === 'claim_awaiting_holder' && e.claimId === ga.claimId);
    const shown = await runBerth(['status', '--server', serving.address]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/HOLDER/);
    expect(shown.stdout).toMatch(new RegExp(`${ga.claimId}.*awaiting, 1?\\d\\.\\ds left`));
    const back = resumeClaim(placement, ga.claimId, ga.resumeToken);
    await back.granted;
    await back.release();

    const b = claim(placement, { cpus: 1, gpus: 1, holdMs: 200, node: 'f.lost' });
    const gb = await b.granted;
    b.call.cancel();
    await w.next((e) => e.kind === 'claim_released' && e.claimId === gb.claimId);

    const text = await (await fetch(page.metrics)).text();
    expect(text).toMatch(/^berth_claims_resumed_total 1$/m);
    expect(text).toMatch(/^berth_claim_holds_ran_out_total 1$/m);
    expect(text).toMatch(/^berth_claims_awaiting_holder_total 2$/m);
    expect(text).toMatch(/^berth_claims_released_total\{outcome="hold_ran_out"\} 1$/m);

    child.kill('SIGTERM');
    const out = await done;
    const lines = out.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
    const events = (kind: string) => lines.filter((l) => l.event === kind).map((l) => l.claimId);
    expect(events('claim_awaiting_holder')).toEqual([ga.claimId, gb.claimId]);
    expect(events('claim_resumed')).toEqual([ga.claimId]);
    expect(lines.find((l) => l.event === 'claim_released' && l.claimId === gb.claimId)?.msg).toBe('hold ran out');
    for (const token of [ga.resumeToken, gb.resumeToken]) expect(out.stdout + out.stderr).not.toContain(token);
  });

  it('are taken back only by their owner when client identities are configured (SPEC R7)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-holds-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const ALICE = 'alice-token-0123456789abcdef';
    const BOB = 'bob-token-0123456789abcdef01';
    writeFileSync(join(dir, 'clients.yaml'), `alice: ${ALICE}\nbob: ${BOB}\n`);
    const t = await startServer({
      cpus: 2,
      gpuIds: [0],
      flags: { clientTokens: join(dir, 'clients.yaml'), token: 'shared-token-0123456789' },
    });
    open.push(() => t.close());
    const as = (token: string) => {
      const withToken: Interceptor = (options, next) =>
        new InterceptingCall(next(options), {
          start(metadata, listener, go) {
            metadata.set('authorization', `Bearer ${token}`);
            go(metadata, listener);
          },
        });
      const c = new PlacementServiceClient(t.address, credentials.createInsecure(), { interceptors: [withToken] });
      open.push(() => c.close());
      return c;
    };
    const alice = as(ALICE);
    const bob = as(BOB);
    const h = claim(alice, { cpus: 1, gpus: 1, holdMs: 10_000 });
    const g = await h.granted;
    h.call.cancel();
    await until(() => t.server.context.holds.leftMs(g.claimId) !== undefined);
    const stolen = await resumeClaim(bob, g.claimId, g.resumeToken).ended; // even with the right token
    expect(stolen?.code).toBe(status.NOT_FOUND);
    const r = resumeClaim(alice, g.claimId, g.resumeToken);
    expect((await r.granted).allocation?.gpuIds).toEqual([0]);
    await r.release();
  });

  it('are kept through the drain like held leases, then given back when the grace ends (SPEC R3)', async () => {
    const t = await startServer({ cpus: 2, gpuIds: [0] });
    let stopped = false;
    open.push(() => (stopped ? undefined : t.close()));
    const released: string[] = [];
    open.push(
      t.server.context.events.subscribe((e) => {
        if (e.kind === 'claim_released') released.push(e.outcome ?? '');
      }),
    );
    const h = claim(t.placement, { cpus: 1, gpus: 1, holdMs: 60_000 });
    const g = await h.granted;
    h.call.cancel();
    await until(() => t.server.context.holds.leftMs(g.claimId) !== undefined);
    const start = Date.now();
    const stopping = t.server.stop(400);
    await until(() => t.server.context.live.draining);
    const refused = await resumeClaim(t.placement, g.claimId, g.resumeToken).ended;
    expect(refused?.code).toBe(status.UNAVAILABLE); // no resume while draining; the claim still awaits
    expect(released).toEqual([]);
    await stopping;
    stopped = true;
    t.placement.close();
    t.worker.close();
    expect(Date.now() - start).toBeGreaterThanOrEqual(390); // the drain waited for it, as for a held lease
    expect(released).toEqual(['server_draining']);
    expect(t.invariantErrors).toEqual([]);
  });
});
