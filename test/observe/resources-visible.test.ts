/**
 * Issue 23 item 1: named per-machine resources and cluster pools are visible. A real `berth serve --resources
 * trainer=2 --pools license/matlab=30` process: `berth status` shows `trainer 2/2` in the engine's row and a pools
 * line, and a real /metrics scrape shows berth_resource_* and berth_pool_*; a claim taking one of each drops both.
 */
import type { ChildProcess } from 'node:child_process';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { type GetSnapshotResponse, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim } from '../support/claims.js';
import { runBerth, spawnBerth } from '../support/cli.js';
import { until } from '../support/until.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** Starts `berth serve …args`; resolves with its gRPC address and metrics URL from its log lines. */
async function serve(args: string[]): Promise<{ address: string; metrics: string }> {
  const child: ChildProcess = spawnBerth([
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--metrics-listen',
    '127.0.0.1:0',
    ...args,
  ]);
  const exited = new Promise((r) => child.once('close', r));
  open.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited;
  });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const line = (msg: string) =>
    log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, string>)
      .find((l) => l.msg === msg);
  await until(() => line('berth serving') !== undefined, 15_000);
  return { address: line('berth serving')!.address, metrics: line('status page and metrics')!.metrics };
}

/** The value of the series written exactly as `series` in a /metrics scrape, or undefined. */
async function gauge(url: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(url)).text();
  const hit = text.split('\n').find((l) => l.startsWith(`${series} `));
  return hit === undefined ? undefined : Number(hit.slice(series.length + 1));
}

describe('named resources and pools are visible', () => {
  it('in berth status and the metrics, and a claim taking one trainer and one license lowers both', async () => {
    const s = await serve(['--cpus', '4', '--gpus', '', '--resources', 'trainer=2', '--pools', 'license/matlab=30']);
    const status = async () => {
      const r = await runBerth(['status', '--server', s.address]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      return r.stdout;
    };
    let out = await status();
    expect(out).toContain('RESOURCES FREE/TOTAL');
    expect(out).toMatch(/^engine\s.*\strainer 2\/2\s/m);
    expect(out).toContain('pools: license/matlab 30/30 free');
    const trainer = (g: string) => `berth_resource_${g}{machine="engine",resource="trainer"}`;
    const matlab = (g: string) => `berth_pool_${g}{pool="license/matlab"}`;
    expect(await gauge(s.metrics, trainer('total'))).toBe(2);
    expect(await gauge(s.metrics, trainer('free'))).toBe(2);
    expect(await gauge(s.metrics, matlab('total'))).toBe(30);
    expect(await gauge(s.metrics, matlab('free'))).toBe(30);

    const client = new PlacementServiceClient(s.address, credentials.createInsecure());
    open.push(() => client.close());
    const c = claim(client, { cpus: 1, resources: { trainer: 1, 'license/matlab': 1 }, node: 'uses.both' });
    open.push(() => c.call.cancel());
    await c.granted;
    out = await status();
    expect(out).toMatch(/^engine\s.*\strainer 1\/2\s/m);
    expect(out).toContain('pools: license/matlab 29/30 free');
    expect(await gauge(s.metrics, trainer('total'))).toBe(2);
    expect(await gauge(s.metrics, trainer('free'))).toBe(1);
    expect(await gauge(s.metrics, matlab('free'))).toBe(29);
    await c.release();
    await until(async () => (await gauge(s.metrics, matlab('free'))) === 30);
    expect(await gauge(s.metrics, trainer('free'))).toBe(2);
  }, 30_000);

  it('a server without named resources or pools shows neither column nor pools line nor series', async () => {
    const s = await serve(['--cpus', '2', '--gpus', '']);
    const r = await runBerth(['status', '--server', s.address]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('CPUS FREE/TOTAL');
    expect(r.stdout).not.toContain('RESOURCES');
    expect(r.stdout).not.toContain('pools:');
    const text = await (await fetch(s.metrics)).text();
    expect(text).not.toMatch(/^berth_(resource|pool)_\w+\{/m);
  }, 30_000);

  it('GPU shares held (SPEC P14): GetSnapshot, a GPU SHARES HELD column and a metric per shared GPU', async () => {
    const s = await serve(['--cpus', '4', '--gpus', '0-1']);
    const client = new PlacementServiceClient(s.address, credentials.createInsecure());
    open.push(() => client.close());
    const share = (g: number, node: string) => claim(client, { cpus: 0, gpus: 0, gpuShare: g, node });
    const a = share(0.5, 'half');
    open.push(() => a.call.cancel());
    await a.granted;
    const b = share(0.25, 'quarter'); // best fit: the partly used GPU
    open.push(() => b.call.cancel());
    await b.granted;
    const snap = await new Promise<GetSnapshotResponse>((resolve, reject) =>
      client.getSnapshot({}, (err, r) => (err ? reject(err) : resolve(r))),
    );
    const engine = snap.machines.find((m) => m.name === 'engine')!;
    expect(engine.gpuShares).toEqual({ 0: 0.75 });
    expect(engine.freeGpuIds).toEqual([1]);
    const r = await runBerth(['status', '--server', s.address]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('GPU SHARES HELD');
    expect(r.stdout).toMatch(/^engine\s.*\s1\s+0: 0\.75\s/m);
    const held = 'berth_machine_gpu_share_held{machine="engine",gpu="0"}';
    expect(await gauge(s.metrics, held)).toBe(0.75);
    await a.release();
    await b.release();
    await until(async () => (await gauge(s.metrics, held)) === undefined);
    expect((await runBerth(['status', '--server', s.address])).stdout).not.toContain('GPU SHARES HELD');
  }, 30_000);
});
