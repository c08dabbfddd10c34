/**
 * `default_ram_mb_per_cpu` (issue 23 item 2, Slurm's DefMemPerCPU) through a real `berth serve` process: an ask
 * without ram_mb asks cores × the default, so it is placed and waits by memory like one that gave it (`waiting for
 * … MB ram`); an ask giving ram_mb keeps its own. Set by the flag or the config file key; a bad value is refused
 * naming the flag.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { runBerth, spawnBerth, waitForLine } from '../support/cli.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** Starts `berth serve` with an engine of 8 cores and 16384 MB and `args`; resolves with a Placement client. */
async function serve(args: string[]): Promise<PlacementServiceClient> {
  const child: ChildProcess = spawnBerth([
    'serve',
    ...['--listen', '127.0.0.1:0', '--cpus', '8', '--gpus', '', '--ram-mb', '16384'],
    ...args,
  ]);
  const exited = new Promise((r) => child.once('close', r));
  open.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited;
  });
  const line = await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(
    (JSON.parse(line) as { address: string }).address,
    credentials.createInsecure(),
  );
  open.push(() => client.close());
  return client;
}

const keep = (c: ClaimHandle) => {
  open.push(() => c.call.cancel());
  return c;
};

describe('default_ram_mb_per_cpu', () => {
  it('an ask without ram_mb asks cores × the default and waits for memory; one with ram_mb keeps its own', async () => {
    const client = await serve(['--default-ram-mb-per-cpu', '4096']);
    const first = await keep(claim(client, { cpus: 2 })).granted;
    expect(first.allocation?.ramMb).toBe(8192);
    const own = await keep(claim(client, { cpus: 2, ramMb: 1024 })).granted;
    expect(own.allocation?.ramMb).toBe(1024);
    // 4 cores are free but 7168 MB: a 2-core ask without ram_mb (8192 MB) waits for memory.
    const third = keep(claim(client, { cpus: 2 }));
    const q = await third.queued;
    expect(q.wanted?.ramMb).toBe(8192);
    expect(q.detail).toContain('waiting for 8192 MB ram');
    const noRam = keep(claim(client, { cpus: 1, ramMb: 0 }));
    expect((await noRam.granted).allocation?.ramMb ?? 0).toBe(0); // ram_mb 0 given: no default
  });

  it('the config file key sets it; a bad flag value is refused naming the flag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-default-ram-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, 'default_ram_mb_per_cpu: 16384\n');
    const client = await serve(['--config', config]);
    const g = await keep(claim(client, { cpus: 1 })).granted;
    expect(g.allocation?.ramMb).toBe(16384);
    const waits = await keep(claim(client, { cpus: 1 })).queued;
    expect(waits.detail).toContain('waiting for 16384 MB ram');
    const bad = await runBerth(['serve', '--listen', '127.0.0.1:0', '--default-ram-mb-per-cpu', '-1']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--default-ram-mb-per-cpu');
  });
});
