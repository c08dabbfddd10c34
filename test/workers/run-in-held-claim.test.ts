/**
 * Issue 19 item 2 (SPEC S2): a Run inside a held claim whose worker is disconnected and held waits for the worker
 * to come back and then runs, instead of failing "is disconnected" at once; when the hold runs out instead it fails
 * UNAVAILABLE "went away". A real `berth worker` through a TCP proxy on loopback whose link the test cuts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim } from '../support/claims.js';
import { finished, spawnBerth } from '../support/cli.js';
import { LinkProxy } from '../support/link-proxy.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A server with `--worker-hold holdS`, and `berth worker w1` (label w) attached through a cuttable proxy. */
async function setup(holdS: number): Promise<{ s: TestServer; proxy: LinkProxy }> {
  const s = await startServer({ cpus: 1, flags: { workerHold: holdS } });
  open.push(() => s.close());
  const proxy = new LinkProxy(s.address);
  const via = await proxy.start();
  open.push(() => proxy.close());
  const stateDir = mkdtempSync(join(tmpdir(), 'berth-held-'));
  open.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const args = ['--name', 'w1', '--labels', 'w', '--cpus', '2', '--gpus', '', '--state-dir', stateDir];
  const child = spawnBerth(['worker', '--server', via, ...args]);
  const exited = finished(child);
  open.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  });
  await until(async () => (await snapshot(s.placement)).machines.some((m) => m.name === 'w1' && m.state === 1));
  return { s, proxy };
}

const disconnected = (s: TestServer) => async () =>
  (await snapshot(s.placement)).machines.some((m) => m.name === 'w1' && m.state === 2);

describe('a Run inside a claim on a disconnected worker', () => {
  it('waits while the worker is held and runs once it is back', async () => {
    const { s, proxy } = await setup(10);
    const c = claim(s.placement, { cpus: 1, label: 'w', policy: Policy.POLICY_REQUIRE });
    const g = await c.granted;
    expect(g.machine).toBe('w1');
    proxy.cut();
    await until(disconnected(s));
    const r = run(s.placement, runRequest({ claimId: g.claimId, argv: ['sh', '-c', 'echo back'] }));
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the Run waits through the cut
    proxy.restore();
    const o = await r.done;
    expect(o.error).toBeNull();
    expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(o).map((l) => l.line)).toEqual(['back']);
    await c.release();
  }, 60_000);

  it('fails UNAVAILABLE "went away" when the hold runs out first', async () => {
    const { s, proxy } = await setup(1);
    const c = claim(s.placement, { cpus: 1, label: 'w', policy: Policy.POLICY_REQUIRE });
    const g = await c.granted;
    proxy.cut();
    await until(disconnected(s));
    const o = await run(s.placement, runRequest({ claimId: g.claimId, argv: ['true'] })).done;
    expect(o.error?.code).toBe(status.UNAVAILABLE);
    expect(o.error?.details).toMatch(/went away|lost/);
    c.call.cancel();
  }, 60_000);
});
