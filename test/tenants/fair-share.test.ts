/**
 * Fair sharing between tenants (SPEC Q1, issue 22 item 3) through the real server with per-client tokens: with a
 * weight in the config, each freed GPU goes to the waiting tenant with the lowest weighted dominant share, so a
 * tenant that floods the queue gets no more than its share; equal weights converge to equal shares and 2:1 weights
 * to 2:1 over 1,000 completions. Without weights the order stays arrival (the same run then favours the flood).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { renderStatus } from '../../src/cli/render-status.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { snapshot } from '../support/snapshot.js';
import { SHARED, type TenantServer, tenantServer } from '../support/tenant-server.js';

type Tenant = 'alice' | 'bob';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A server with `gpus` GPUs and `config`: a client per tenant, and its /metrics URL. */
async function serve(config: string, gpus: number): Promise<TenantServer> {
  const s = await tenantServer(config, { gpus, cpus: 64 });
  open.push(() => s.close());
  return s;
}

/**
 * Keeps `outstanding[t]` one-GPU claims open per tenant (alice's first, so hers are the older waiters) and, `n` times,
 * releases the claim held longest and opens another for its tenant, then waits for the GPU freed to be granted.
 * Returns what each tenant held on average after each completion, then GetSnapshot and a /metrics scrape.
 */
async function churn(
  clients: Record<Tenant, PlacementServiceClient> & { metricsUrl: string },
  outstanding: Record<Tenant, number>,
  n: number,
) {
  const held: { tenant: Tenant; c: ClaimHandle }[] = [];
  const count: Record<Tenant, number> = { alice: 0, bob: 0 };
  let onGrant: (() => void) | undefined;
  const all: ClaimHandle[] = [];
  const openOne = (tenant: Tenant) => {
    const c = claim(clients[tenant], { gpus: 1, cpus: 1 });
    all.push(c);
    c.granted.then(
      () => {
        held.push({ tenant, c });
        count[tenant]++;
        onGrant?.();
      },
      () => {},
    );
  };
  const total = (gpus: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (held.length === gpus) (onGrant = undefined), resolve();
      };
      onGrant = check;
      check();
    });
  for (const tenant of ['alice', 'bob'] as const) for (let i = 0; i < outstanding[tenant]; i++) openOne(tenant);
  const gpus = await new Promise<number>((resolve) => {
    // every claim has been answered (granted or queued) once each stream said something
    Promise.all(all.map((c) => Promise.race([c.granted, c.queued]))).then(() => resolve(held.length));
  });
  const sum: Record<Tenant, number> = { alice: 0, bob: 0 };
  for (let i = 0; i < n; i++) {
    const { tenant, c } = held.shift()!;
    count[tenant]--;
    const refilled = total(gpus);
    await c.release();
    openOne(tenant);
    await refilled;
    sum.alice += count.alice;
    sum.bob += count.bob;
  }
  const snap = await snapshot(clients.alice);
  const metrics = await (await fetch(clients.metricsUrl, { headers: { authorization: `Bearer ${SHARED}` } })).text();
  for (const c of all) c.call.cancel();
  return { alice: sum.alice / n, bob: sum.bob / n, snap, metrics };
}

describe('fair sharing between tenants', () => {
  it('gives two tenants of equal weight equal shares of the GPUs over 1,000 completions, however many each queues', async () => {
    const clients = await serve('tenants:\n  alice: { weight: 1 }\n  bob: { weight: 1 }\n', 8);
    const r = await churn(clients, { alice: 40, bob: 8 }, 1000);
    expect(Math.abs(r.alice - r.bob), `alice ${r.alice}, bob ${r.bob} GPUs on average`).toBeLessThanOrEqual(0.5);
    // each holds 4 of the 8 GPUs, its dominant resource: GetSnapshot, `berth status` and /metrics say so
    expect(r.snap.tenants.find((t) => t.tenant === 'bob')).toMatchObject({ weight: 1, dominantShare: 0.5 });
    expect(renderStatus(r.snap)).toContain('\ntenant bob: no quota; share 0.50 (weight 1)\n');
    expect(r.metrics).toMatch(/^berth_tenant_share\{tenant="alice"\} 0\.5$/m);
  });

  it('gives a tenant of weight 2 twice the GPUs of a tenant of weight 1', async () => {
    const clients = await serve('tenants:\n  alice: { weight: 2 }\n  bob: { weight: 1 }\n', 12);
    const r = await churn(clients, { alice: 40, bob: 12 }, 1000);
    expect(Math.abs(r.alice - 2 * r.bob), `alice ${r.alice}, bob ${r.bob} GPUs on average`).toBeLessThanOrEqual(0.5);
  });

  it('serves in arrival order without weights: the tenant that queued more holds more', async () => {
    const clients = await serve('tenants:\n  alice: { nominal: { gpus: 8 } }\n', 8);
    const r = await churn(clients, { alice: 40, bob: 8 }, 200);
    expect(r.alice - r.bob, `alice ${r.alice}, bob ${r.bob} GPUs on average`).toBeGreaterThan(3);
  });
});
