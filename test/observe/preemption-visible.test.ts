/**
 * Issue 22 item 4: a preemption is visible — on the live status page (real headless Chromium: the victim's row says
 * who preempts it and the grace left, the waiting preemptor's row its priority and class) and in a real /metrics
 * scrape (`berth_claims_preempted_total`, the victim's release counted with outcome `preempted`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claim, type ClaimHandle } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { chromiumPath } from '../support/tools.js';

const CHROMIUM = chromiumPath();

/** One Prometheus sample's value from /metrics text (0 when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe.skipIf(!CHROMIUM)('a preemption is visible', () => {
  let browser: Browser;
  let t: TestServer | undefined;
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
    await t?.close();
    t = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('on the page (victim and preemptor rows) and in /metrics (preemptions, releases by outcome)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-preempt-page-'));
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, 'priority_classes:\n  urgent: { value: 100 }\n  batch: { value: 0, default: true }\n');
    t = await startServer({ cpus: 1, flags: { config, metricsListen: '127.0.0.1:0', preemptionGrace: 60 } });
    const low = claim(t.placement, { cpus: 1, node: 'sweep.3' });
    open.push(low);
    const gl = await low.granted;
    const page = await browser.newPage();
    try {
      await page.goto(t.server.observe!.url);
      await page.locator('#conn.live').waitFor({ timeout: 5000 });
      const urgent = claim(t.placement, { cpus: 1, node: 'train.eval', priorityClass: 'urgent' });
      open.push(urgent);
      const q = await urgent.queued;
      await low.preempting;
      const victim = page.locator(`#held tbody tr[data-key="${gl.claimId}"] td`).nth(6);
      await page.locator('#held tbody td', { hasText: 'preempted by' }).waitFor({ timeout: 5000 });
      await expect(victim.textContent()).resolves.toMatch(new RegExp(`preempted by ${q.claimId} \\(\\d+s left\\)`));
      const waiting = page.locator(`#waiting tbody tr[data-key="${q.claimId}"] td`).nth(4);
      await expect(waiting.textContent()).resolves.toMatch(
        /^priority 100 \(urgent\): 1 cpu\(s\); preempting on engine$/,
      );

      const during = await (await fetch(`${t.server.observe!.url}/metrics`)).text();
      expect(sample(during, 'berth_claims_waiting_by_priority{priority="100"}')).toBe(1); // the preemptor waits
      await low.release();
      await urgent.granted;
      const metrics = await (await fetch(`${t.server.observe!.url}/metrics`)).text();
      expect(sample(metrics, 'berth_claims_preempted_total')).toBe(1);
      expect(sample(metrics, 'berth_claims_released_total{outcome="released"}')).toBe(1); // given back in its grace
    } finally {
      await page.close();
    }
  });
});
