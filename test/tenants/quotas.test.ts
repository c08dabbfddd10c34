/**
 * Tenant quotas (SPEC Q3, issue 22 item 3) through the real server with per-client tokens: a tenant at its nominal
 * waits, held by quota and told so, while other tenants' claims are not held back by it; a tenant in a cohort borrows
 * what the others leave, up to its borrowing limit, and the cohort never holds more than it lends; a reload of the
 * config frees what a larger quota allows; a bad `tenants:` entry is an error naming the line and the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClaimResponse, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { status } from '@grpc/grpc-js';
import { renderStatus } from '../../src/cli/render-status.js';
import { QuotaBook } from '../../src/placement/quota.js';
import { UNIT } from '../../src/resources/quantity.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { snapshot } from '../support/snapshot.js';
import { claimGroup } from '../support/groups.js';
import { clientWithToken } from '../support/token-client.js';
import type { TestServer } from '../support/server.js';
import { SHARED, TOKENS, tenantServer } from '../support/tenant-server.js';

const ALICE = TOKENS.alice;
const BOB = TOKENS.bob;

let dir = '';
const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  dir = '';
});

/** A server with `gpus` GPUs, alice's and bob's tokens, and `config` as its config file (in `dir`). */
async function serve(config: string, gpus = 8): Promise<TestServer> {
  const s = await tenantServer(config, { gpus });
  open.push(() => s.close());
  dir = s.dir;
  return s.t;
}

function clientWith(address: string, token: string): PlacementServiceClient {
  const c = clientWithToken(address, token);
  open.push(() => c.close());
  return c;
}

/** `n` claims of one GPU each by `client`, each awaited granted. */
async function grantMany(client: PlacementServiceClient, n: number): Promise<ClaimHandle[]> {
  const out: ClaimHandle[] = [];
  for (let i = 0; i < n; i++) {
    const c = claim(client, { gpus: 1 });
    await c.granted;
    out.push(c);
  }
  return out;
}

describe('a tenant at its nominal quota', () => {
  it('waits held by quota, says so, holds nobody back, and is granted when its own claim ends', async () => {
    const t = await serve('tenants:\n  alice: { nominal: { gpus: 2 } }\n');
    const alice = clientWith(t.address, ALICE);
    const bob = clientWith(t.address, BOB);
    const [first] = await grantMany(alice, 2);
    const third = claim(alice, { gpus: 1 });
    const q = await third.queued;
    expect(q.detail).toMatch(/held by quota: tenant alice: gpus 2 of 2 nominal, borrowing 0 of 0 \(asks 1\)/);
    // six GPUs are free and nothing of alice's holds them back: bob (no quota) takes all six at once
    await grantMany(bob, 6);
    const snap = await snapshot(bob); // over real gRPC, as grpcurl and `berth status` read it
    expect(snap.waiting.map((w) => w.reason?.detail)).toEqual([expect.stringContaining('held by quota: tenant alice')]);
    expect(snap.tenants).toEqual([
      {
        tenant: 'alice',
        cohort: '',
        resources: [{ name: 'gpus', used: 2, nominal: 2, borrowingLimit: 0 }],
        weight: 0, // no tenant has a weight: fair sharing is off
        dominantShare: 0,
      },
    ]);
    expect(renderStatus(snap)).toContain('\ntenant alice: gpus 2/2 nominal\n'); // what `berth status` prints
    const scrape = await fetch(`${t.server.observe!.url}/metrics`, { headers: { authorization: `Bearer ${SHARED}` } });
    const metrics = await scrape.text(); // a real scrape
    expect(metrics).toMatch(/^berth_tenant_used\{tenant="alice",resource="gpus"\} 2$/m);
    expect(metrics).toMatch(/^berth_tenant_nominal\{tenant="alice",resource="gpus"\} 2$/m);
    await first.release();
    const g = await third.granted; // its own release makes room in its quota; the GPU it freed is there
    expect(g.allocation?.gpuIds).toHaveLength(1);
    expect(t.invariantErrors).toEqual([]);
  });

  it('is freed by a config reload that raises its quota, and held again by one that lowers it', async () => {
    const t = await serve('tenants:\n  alice: { nominal: { gpus: 1 } }\n');
    const alice = clientWith(t.address, ALICE);
    await grantMany(alice, 1);
    const second = claim(alice, { gpus: 1 });
    await second.queued;
    writeFileSync(join(dir, 'berth.yaml'), 'tenants:\n  alice: { nominal: { gpus: 3 } }\n');
    t.server.reloadPriorityClasses();
    await second.granted;
    writeFileSync(join(dir, 'berth.yaml'), 'tenants:\n  alice: { nominal: { gpus: 1 } }\n');
    t.server.reloadPriorityClasses(); // lowering never revokes: alice keeps both
    expect(t.server.context.placer.tenantViews()[0].resources[0]).toMatchObject({ used: 2, nominal: 1 });
    const third = claim(alice, { gpus: 1 });
    expect((await third.queued).detail).toMatch(/tenant alice: gpus 2 of 1 nominal/);
  });
});

describe('a claim its quota can never admit', () => {
  it('fails FAILED_PRECONDITION at once naming the field and the most it may hold, alone or in a cohort', async () => {
    const t = await serve(
      'tenants:\n  carol: { nominal: { gpus: 2 } }\n' +
        '  alice: { cohort: lab, nominal: { gpus: 2 }, borrowing_limit: { gpus: 5 } }\n' +
        '  bob: { cohort: lab, nominal: { gpus: 4 }, lending_limit: { gpus: 1 } }\n',
    );
    const alice = clientWith(t.address, ALICE);
    const four = claim(alice, { gpus: 4 }); // 2 of its own + 1 bob lends: at most 3, though the limit says 7
    const err = await four.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toBe('ask.gpus: tenant alice may hold at most 3 (cohort lab lends 3 in all; asks 4)');
    const bob = clientWith(t.address, BOB);
    const many = claim(bob, { gpus: 5 }); // bob keeps 3 and borrows alice's 2: 5 fits
    await many.granted;
    expect(t.invariantErrors).toEqual([]);
    const alone = new QuotaBook(); // without a cohort: the nominal is the most
    alone.set({ carol: { nominal: { gpus: 2 * UNIT } } }, []);
    expect(alone.never('carol', { gpus: 4 * UNIT })).toBe(
      'ask.gpus: tenant carol may hold at most 2 (nominal 2, borrowing limit 0; asks 4)',
    );
    expect(alone.never('carol', { gpus: 2 * UNIT })).toBeUndefined();
  });
});

describe('a claim waiting for room', () => {
  it('is told, with a fresh Queued, when a reload lowers its quota so that quota holds it', async () => {
    const t = await serve('tenants:\n  alice: { nominal: { gpus: 4 } }\n');
    const alice = clientWith(t.address, ALICE);
    const bob = clientWith(t.address, BOB);
    await grantMany(bob, 7);
    const c = claim(alice, { gpus: 2 }); // 1 GPU free: room, not quota, holds it
    expect((await c.queued).detail).not.toContain('held by quota');
    const told = new Promise<string>((resolve) =>
      c.call.on('data', (r: ClaimResponse) => {
        if (r.kind?.$case === 'queued' && r.kind.value.detail.includes('held by quota')) resolve(r.kind.value.detail);
      }),
    );
    writeFileSync(join(dir, 'berth.yaml'), 'tenants:\n  alice: { nominal: { gpus: 1 } }\n');
    t.server.reloadPriorityClasses();
    expect(await told).toMatch(/^held by quota: tenant alice: gpus 0 of 1 nominal, borrowing 0 of 0 \(asks 2\)/);
    expect(t.invariantErrors).toEqual([]);
  });
});

describe('a group of a tenant with a quota', () => {
  it('counts every member at once: over quota it waits whole, says so, is granted when room comes', async () => {
    const t = await serve('tenants:\n  alice: { nominal: { gpus: 3 } }\n');
    const alice = clientWith(t.address, ALICE);
    const [one] = await grantMany(alice, 1);
    const group = claimGroup(alice, [{ gpus: 1 }, { gpus: 1 }, { gpus: 1 }]);
    expect((await group.queued).detail).toMatch(/tenant alice: gpus 1 of 3 nominal, borrowing 0 of 0 \(asks 3\)/);
    expect(t.server.context.placer.tenantViews()[0].resources[0].used).toBe(1); // no member is held alone
    await one.release();
    const g = await group.granted;
    expect(g.members).toHaveLength(3);
    expect(t.server.context.placer.tenantViews()[0].resources[0].used).toBe(3);
    expect(t.invariantErrors).toEqual([]);
  });
});

describe('tenants sharing a cohort', () => {
  const COHORT = `tenants:
  alice: { cohort: lab, nominal: { gpus: 4 }, borrowing_limit: { gpus: 2 } }
  bob: { cohort: lab, nominal: { gpus: 4 } }
`;

  it('borrow what the other leaves up to the borrowing limit, and never hold more than the cohort lends', async () => {
    const t = await serve(COHORT, 16); // capacity is not the limit: 16 GPUs, the cohort lends 8
    const alice = clientWith(t.address, ALICE);
    const bob = clientWith(t.address, BOB);
    await grantMany(alice, 6); // 4 of its own, 2 of bob's
    const seventh = claim(alice, { gpus: 1 });
    expect((await seventh.queued).detail).toMatch(/tenant alice: gpus 6 of 4 nominal, borrowing 2 of 2 \(asks 1\)/);
    const bobs = await grantMany(bob, 2); // the cohort's 8: alice 6, bob 2
    const third = claim(bob, { gpus: 1 });
    expect((await third.queued).detail).toMatch(
      /tenant bob: gpus 2 of 4 nominal, borrowing 0 of unlimited; cohort lab: gpus 8 of 8 in use/,
    );
    await bobs[0].release(); // room in the cohort: bob's waiting claim (alice is at her limit) takes it
    await third.granted;
    const views = t.server.context.placer.tenantViews();
    expect(views.map((v) => [v.tenant, v.resources[0].used])).toEqual([
      ['alice', 6],
      ['bob', 2],
    ]);
    expect(t.invariantErrors).toEqual([]);
  });
});

describe('a bad tenants entry', () => {
  it('is an error naming the file line and the key, and nothing starts', () => {
    const d = mkdtempSync(join(tmpdir(), 'berth-quotas-bad-'));
    open.push(() => rmSync(d, { recursive: true, force: true }));
    const file = join(d, 'berth.yaml');
    const resolve = () => resolveServeOptions({ config: file, stateDir: d }, {});
    writeFileSync(file, 'tenants:\n  alice:\n    nominal: { gpus: 2 }\n    borrowing_limit: { gpus: 1 }\n');
    expect(resolve).toThrow(
      `${file} line 4: tenants.alice.borrowing_limit: only a tenant in a cohort borrows or lends`,
    );
    writeFileSync(
      file,
      'tenants:\n  alice:\n    cohort: lab\n    nominal: { gpus: 2 }\n    lending_limit: { cpus: 1 }\n',
    );
    expect(resolve).toThrow(/line 5: tenants\.alice\.lending_limit\.cpus: not in its nominal \(gpus\)/);
    writeFileSync(file, 'tenants:\n  alice: { nominal: { gpus: -1 } }\n');
    expect(resolve).toThrow(/tenants\.alice\.nominal\.gpus: a number from 0 to .* \(got -1\)/);
    writeFileSync(file, 'tenants:\n  alice: { nominal: {}, share: 2 }\n');
    expect(resolve).toThrow(/tenants\.alice\.share: unknown key \(known: cohort, nominal, borrowing_limit/);
    writeFileSync(file, 'tenants:\n  alice: { weight: .inf }\n');
    expect(resolve).toThrow(/line 2: tenants\.alice\.weight: .* \(got Infinity\)/);
    writeFileSync(file, 'tenants:\n  alice: { weight: 0 }\n');
    expect(resolve).toThrow(/line 2: tenants\.alice\.weight: at least 0\.0001 \(got 0\)/);
    writeFileSync(file, 'tenants:\n  alice: { cohort: lab, nominal: { gpus: 4 }, lending_limit: { gpus: 6 } }\n');
    expect(resolve).toThrow(/tenants\.alice\.lending_limit\.gpus: more than its nominal \(4\)/);
  });
});
