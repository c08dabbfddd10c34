/**
 * Taking back a cohort's lent share (SPEC Q3 reclaim, issue 22 item 3) through the real server with per-client
 * tokens: a tenant within its nominal whose share another member borrowed tells the borrower's youngest claims to
 * give it back (Preempting on their Claim streams), and is granted as they go — the borrower cannot take the room
 * again meanwhile; a tenant already at its nominal takes nothing back; a borrower is never taken below its nominal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { snapshot } from '../support/snapshot.js';
import { type TenantServer, tenantServer } from '../support/tenant-server.js';

const LAB = 'tenants:\n  alice: { cohort: lab, nominal: { gpus: 4 } }\n  bob: { cohort: lab, nominal: { gpus: 4 } }\n';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A server with 8 GPUs, the lab cohort, a 60 s preemption grace; a client for alice and one for bob. */
async function serve(): Promise<TenantServer> {
  const s = await tenantServer(LAB, { gpus: 8, flags: { preemptionGrace: 60 } });
  open.push(() => s.close());
  return s;
}

/** `n` claims of `gpus` GPUs by `client`, each awaited granted (so in arrival order). */
async function grantMany(client: PlacementServiceClient, n: number, gpus = 1): Promise<ClaimHandle[]> {
  const out: ClaimHandle[] = [];
  for (let i = 0; i < n; i++) {
    const c = claim(client, { gpus });
    open.push(() => c.call.cancel());
    await c.granted;
    out.push(c);
  }
  return out;
}

const told = (cs: ClaimHandle[]) => cs.filter((c) => c.responses.some((r) => r.kind?.$case === 'preempting'));

describe('a tenant within its nominal whose share a cohort member borrowed', () => {
  it("takes it back: the borrower's youngest claims are told, and the tenant is granted as they go", async () => {
    const { t, alice, bob } = await serve();
    const held = await grantMany(bob, 8); // bob borrows all 4 of alice's lent GPUs
    const a = claim(alice, { gpus: 2 });
    open.push(() => a.call.cancel());
    const q = await a.queued;
    expect(q.detail).toMatch(/held by quota: tenant alice: gpus 0 of 4 nominal.*cohort lab: gpus 8 of 8 in use/);
    expect(q.detail).toContain('reclaiming 2 borrowed claims on engine (grace 60 s)');
    const [v1, v2] = await Promise.all([held[7].preempting, held[6].preempting]); // the youngest two
    expect(v1.byClaimId).toBe(v2.byClaimId);
    expect(told(held)).toEqual([held[6], held[7]]);
    const waiting = (await snapshot(alice)).waiting.map((w) => w.reason?.detail);
    expect(waiting).toEqual([expect.stringContaining('held by quota: tenant alice')]);
    expect(waiting[0]).toContain('; reclaiming what its cohort lent');
    // bob may not take the room again while alice waits for it
    const again = claim(bob, { gpus: 1 });
    open.push(() => again.call.cancel());
    expect((await again.queued).detail).toMatch(
      /held by quota: tenant bob: .*gpus 8 of 8 in use, 2 reserved for a reclaim/,
    );
    await held[7].release(); // the GPU freed stays alice's
    await held[6].release();
    const g = await a.granted;
    expect(g.allocation?.gpuIds).toHaveLength(2);
    expect(again.responses.some((r) => r.kind?.$case === 'granted')).toBe(false);
    expect(t.server.context.placer.tenantViews().map((v) => [v.tenant, v.resources[0].used])).toEqual([
      ['alice', 2],
      ['bob', 6],
    ]);
    expect(t.invariantErrors).toEqual([]);
  });

  it('never takes a borrower below its own nominal: one claim of 8 GPUs is not taken for 2', async () => {
    const { t, alice, bob } = await serve();
    const held = await grantMany(bob, 1, 8);
    const a = claim(alice, { gpus: 2 });
    open.push(() => a.call.cancel());
    expect((await a.queued).detail).toContain('reclaiming nothing yet: no borrowed claims whose going makes room');
    expect(told(held)).toEqual([]);
    await held[0].release();
    expect((await a.granted).allocation?.gpuIds).toHaveLength(2); // granted when bob gives it back himself
    expect(t.invariantErrors).toEqual([]);
  });

  it('takes nothing back once at its nominal', async () => {
    const { t, alice, bob } = await serve();
    await grantMany(alice, 1, 4); // alice at her nominal
    const held = await grantMany(bob, 1, 4);
    const more = claim(alice, { gpus: 1 }); // past her nominal: borrowing, not reclaiming
    open.push(() => more.call.cancel());
    expect((await more.queued).detail).toMatch(/held by quota: tenant alice: gpus 4 of 4 nominal/);
    expect((await more.queued).detail).toContain('reclaiming nothing: tenant alice would be past its own nominal');
    expect(told(held)).toEqual([]);
    expect(t.invariantErrors).toEqual([]);
  });
});
