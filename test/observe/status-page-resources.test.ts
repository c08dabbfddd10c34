/**
 * Issue 23: the live status page (real headless Chromium) shows a machine's named resources and the cluster's
 * pools, and a claim taking one trainer and one license lowers both on the page; a GPU held in shares shows the
 * share held of it.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claim, fakeWorker } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { chromiumPath } from '../support/tools.js';

const CHROMIUM = chromiumPath();

describe.skipIf(!CHROMIUM)('the status page shows named resources and pools', () => {
  let browser: Browser;
  let t: TestServer | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('a trainer and a license taken by a claim show on the page, and come back on release', async () => {
    t = await startServer({
      cpus: 0,
      flags: { metricsListen: '127.0.0.1:0', pools: 'license/matlab=30' },
    });
    const w = fakeWorker(t.worker, 'box', { cpus: 4, resources: { trainer: 1 } });
    await w.welcomed;
    const page = await browser.newPage();
    try {
      await page.goto(t.server.observe!.url);
      await page.locator('#conn.live').waitFor({ timeout: 5000 });
      const named = page.locator('#machines tbody tr[data-key="box"] td').nth(8);
      const pool = page.locator('#pools tbody tr[data-key="license/matlab"] td').nth(1);
      await expect(named.textContent()).resolves.toBe('trainer 1 / 1');
      await expect(pool.textContent()).resolves.toBe('30 / 30');
      const c = claim(t.placement, { cpus: 1, resources: { trainer: 1, 'license/matlab': 1 } });
      await c.granted;
      await page.locator('#pools tbody td', { hasText: '29 / 30' }).waitFor({ timeout: 5000 });
      await expect(named.textContent()).resolves.toBe('trainer 0 / 1');
      await c.release();
      await page.locator('#pools tbody td', { hasText: '30 / 30' }).waitFor({ timeout: 5000 });
      await expect(named.textContent()).resolves.toBe('trainer 1 / 1');
    } finally {
      w.close();
      await page.close();
    }
  });

  it('a GPU held in shares shows the share held of it, and is free again when the shares go', async () => {
    t = await startServer({ cpus: 0, flags: { metricsListen: '127.0.0.1:0' } });
    const w = fakeWorker(t.worker, 'gpubox', { cpus: 4, gpuIds: [0, 1] });
    await w.welcomed;
    const page = await browser.newPage();
    try {
      await page.goto(t.server.observe!.url);
      await page.locator('#conn.live').waitFor({ timeout: 5000 });
      const gpus = page.locator('#machines tbody tr[data-key="gpubox"] td').nth(4).locator('span.gpu');
      await expect(gpus.allTextContents()).resolves.toEqual(['0: free', '1: free']);
      const a = claim(t.placement, { cpus: 0, gpuShare: 0.25 });
      const b = claim(t.placement, { cpus: 0, gpuShare: 0.5 });
      await Promise.all([a.granted, b.granted]);
      await page.locator('#machines span.gpu', { hasText: '0.75 shared' }).waitFor({ timeout: 5000 });
      await expect(gpus.allTextContents()).resolves.toEqual(['0: 0.75 shared', '1: free']);
      await a.release();
      await b.release();
      await page.locator('#machines span.gpu', { hasText: '0: free' }).waitFor({ timeout: 5000 });
    } finally {
      w.close();
      await page.close();
    }
  });
});
