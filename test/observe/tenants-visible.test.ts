/**
 * Issue 22 item 4: tenants' use against their quotas is visible on the live status page (real headless Chromium: a
 * row per tenant, its cohort, used / nominal and the borrowing limit) and follows a grant as it happens (SPEC Q3).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { clientWithToken } from '../support/token-client.js';
import { chromiumPath } from '../support/tools.js';

const CHROMIUM = chromiumPath();
const ALICE = 'alice-token-0123456789abcdef';
const SHARED = 'shared-token-0123456789';

describe.skipIf(!CHROMIUM)("a tenant's quota is visible", () => {
  let browser: Browser;
  let t: TestServer | undefined;
  let alice: PlacementServiceClient | undefined;
  let dir: string | undefined;
  const open: ClaimHandle[] = [];
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const c of open.splice(0)) c.call.cancel();
    alice?.close();
    await t?.close();
    t = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('on the page: a row per tenant, its cohort, use against nominal and fair share, updated as claims are granted', async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-tenants-page-'));
    writeFileSync(join(dir, 'clients.yaml'), `alice: ${ALICE}\n`);
    writeFileSync(
      join(dir, 'berth.yaml'),
      'tenants:\n  alice: { cohort: lab, nominal: { cpus: 2 }, borrowing_limit: { cpus: 1 }, weight: 2 }\n' +
        '  bob: { cohort: lab, nominal: { cpus: 2 } }\n',
    );
    t = await startServer({
      cpus: 4,
      flags: {
        clientTokens: join(dir, 'clients.yaml'),
        token: SHARED,
        config: join(dir, 'berth.yaml'),
        metricsListen: '127.0.0.1:0',
      },
    });
    alice = clientWithToken(t.address, ALICE);
    const page = await browser.newPage();
    try {
      await page.setExtraHTTPHeaders({ authorization: `Bearer ${SHARED}` });
      await page.goto(t.server.observe!.url);
      await page.locator('#conn.live').waitFor({ timeout: 5000 });
      const row = page.locator('#tenants tbody tr[data-key="alice"] td');
      await expect(row.allTextContents()).resolves.toEqual(['alice', 'lab', 'cpus 0 / 2 (1)', '0.00 (2)']);
      const c = claim(alice, { cpus: 3 });
      open.push(c);
      await c.granted; // 2 of its own and 1 borrowed from bob
      await page.locator('#tenants tbody td', { hasText: 'cpus 3 / 2' }).waitFor({ timeout: 5000 });
      // its share: 3 of the 4 cores, at weight 2
      await expect(row.allTextContents()).resolves.toEqual(['alice', 'lab', 'cpus 3 / 2 (1)', '0.38 (2)']);
      const bob = page.locator('#tenants tbody tr[data-key="bob"] td');
      await expect(bob.allTextContents()).resolves.toEqual(['bob', 'lab', 'cpus 0 / 2 (unlimited)', '0.00 (1)']);
    } finally {
      await page.close();
    }
  });
});
