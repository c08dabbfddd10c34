/**
 * Issue 13 item 3: the live status page in a real headless Chromium (Debian's chromium, driven by
 * playwright-core): it loads, shows a claim taken by a test client within a second (Server-Sent
 * Events), shows it gone after release, and with a token asks for it. Screenshots go to
 * test-results/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claim } from '../support/claims.js';
import { ROOT } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { chromiumPath } from '../support/tools.js';

const CHROMIUM = chromiumPath();
const RESULTS = join(ROOT, 'test-results');

describe.skipIf(!CHROMIUM)('the live status page in headless Chromium', () => {
  let browser: Browser;
  let t: TestServer | undefined;
  beforeAll(async () => {
    mkdirSync(RESULTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it(
    'shows a claim within a second of the grant, ' + 'with its GPU on the machine, and drops it after release',
    async () => {
      t = await startServer({ cpus: 4, gpuIds: [0, 1], flags: { metricsListen: '127.0.0.1:0' } });
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      try {
        await page.goto(t.server.observe!.url);
        await page.locator('#conn.live').waitFor({ timeout: 5000 });
        await expect(page.locator('#machines tbody tr[data-key="engine"] td').nth(3).textContent()).resolves.toBe(
          '4 / 4',
        );
        const waiter = claim(t.placement, { cpus: 3, gpus: 1, node: 'flow.train', runId: 'run-7' });
        await waiter.granted;
        const queued = claim(t.placement, { cpus: 2, node: 'flow.eval', runId: 'run-7' });
        await queued.queued;
        const held = page.locator('#held tbody tr', { hasText: 'flow.train' });
        await held.waitFor({ timeout: 1000 });
        await expect(held.locator('td').nth(5).textContent()).resolves.toBe('0');
        await expect(page.locator('#machines .gpu.held').first().textContent()).resolves.toBe('0: flow.train');
        const waiting = page.locator('#waiting tbody tr', { hasText: 'flow.eval' });
        await waiting.waitFor({ timeout: 1000 });
        await expect(waiting.locator('td').nth(4).textContent()).resolves.toBe('2 cpu(s)');
        await page.locator('#events li', { hasText: 'node_queued' }).waitFor({ timeout: 1000 });
        await page.screenshot({ path: join(RESULTS, 'status-page.png'), fullPage: true });

        queued.call.end();
        await waiter.release();
        await held.waitFor({ state: 'detached', timeout: 1000 });
        await waiting.waitFor({ state: 'detached', timeout: 1000 });
        await page.locator('#events li', { hasText: 'claim_released' }).first().waitFor({ timeout: 1000 });
        await expect(page.locator('#machines tbody tr[data-key="engine"] td').nth(3).textContent()).resolves.toBe(
          '4 / 4',
        );
        await page.screenshot({ path: join(RESULTS, 'status-page-released.png'), fullPage: true });
      } finally {
        await page.close();
      }
    },
  );

  it('asks for the token when the server has one, then shows the books', async () => {
    t = await startServer({ cpus: 2, flags: { metricsListen: '127.0.0.1:0', token: 's3cret' } });
    const page = await browser.newPage();
    try {
      await page.goto(t.server.observe!.url);
      await page.locator('#login').waitFor({ state: 'visible', timeout: 5000 });
      expect(await page.locator('#main').isVisible()).toBe(false);
      await page.fill('#token', 'wrong');
      await page.click('#login button');
      await page.locator('#login-error', { hasText: 'wrong token' }).waitFor({ timeout: 5000 });
      await page.fill('#token', 's3cret');
      await page.click('#login button');
      await page.locator('#conn.live').waitFor({ timeout: 5000 });
      await expect(page.locator('#machines tbody tr[data-key="engine"] td').nth(3).textContent()).resolves.toBe(
        '2 / 2',
      );
    } finally {
      await page.close();
    }
  });
});
