/**
 * The journal across a `berth serve` SIGKILL (issue 19 items 4 and 7, SPEC S4, S6): real server
 * processes started again on the same state directory; real `berth worker` agents. Held claims come
 * back with the same GPU ids and are granted to nobody else during the claim hold; a journaled worker
 * counts during the restart hold (an ask waits for it instead of being clamped to the engine); a first
 * start refuses an unknown required label at once while a restart waits for a journaled one; a corrupt
 * or locked state directory is refused naming it.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { claim, resumeClaim } from '../support/claims.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Ends `child` with SIGKILL (no drain, no journal close: a crash) and waits for it to exit. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

interface Serving {
  child: ChildProcess;
  client: PlacementServiceClient;
  address: string;
  /** stderr so far (JSON log lines). */
  log: () => string;
}

/** `berth serve --state-dir DIR ...flags` on a loopback port; resolves once it serves. */
async function serve(stateDir: string, flags: string[] = []): Promise<Serving> {
  const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--state-dir', stateDir, '--grace', '1', ...flags]);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  cleanup.push(() => kill(child));
  const line = await waitForLine(child, /"msg":"berth serving"/);
  const address = String(JSON.parse(line).address);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client, address, log: () => err };
}

/** A real `berth worker` with `flags`, resolved once the server lists it. */
async function worker(s: Serving, name: string, flags: string[]): Promise<ChildProcess> {
  const child = spawnBerth([
    'worker',
    '--server',
    s.address,
    '--name',
    name,
    '--state-dir',
    tempDir('berth-w-'),
    ...flags,
  ]);
  cleanup.push(() => kill(child));
  await until(async () => (await snapshot(s.client)).machines.some((m) => m.name === name));
  return child;
}

describe('the journal across a server SIGKILL', () => {
  it(
    'held claims come back with the same GPU ids, are granted to nobody else during the claim hold, ' +
      'and are released when it runs out',
    async () => {
      const dir = tempDir('berth-state-');
      const s1 = await serve(dir, ['--cpus', '4', '--gpus', '0-3']);
      const a = claim(s1.client, { cpus: 1, gpus: 2 });
      const b = claim(s1.client, { cpus: 1, gpus: 1 });
      const [ga, gb] = [await a.granted, await b.granted];
      expect([ga.allocation?.gpuIds, gb.allocation?.gpuIds]).toEqual([[0, 1], [2]]);
      const grantedBy = Date.now();
      await kill(s1.child);

      const s2 = await serve(dir, ['--cpus', '4', '--gpus', '0-3', '--claim-hold', '3']);
      const sinceGrant = Date.now() - grantedBy; // taken before the snapshot: its heldMs can only be larger
      const snap = await snapshot(s2.client);
      // held since the grant, not since the restart
      for (const h of snap.held) expect(h.heldMs).toBeGreaterThanOrEqual(sinceGrant);
      const held = snap.held.map((h) => [h.claimId, h.allocation?.gpuIds]);
      expect(held.sort()).toEqual(
        [
          [ga.claimId, [0, 1]],
          [gb.claimId, [2]],
        ].sort(),
      );
      expect(s2.log()).toMatch(/"claims":2.*"msg":"restored from the journal"/);
      // Only gpu 3 is free: a one-GPU ask gets it, a two-GPU ask waits for the restored claims.
      const one = claim(s2.client, { cpus: 1, gpus: 1 });
      expect((await one.granted).allocation?.gpuIds).toEqual([3]);
      const two = claim(s2.client, { cpus: 1, gpus: 2 });
      await two.queued;
      // The claim hold runs out (nobody took the claims back): they are released and the waiter gets their GPUs.
      expect((await two.granted).allocation?.gpuIds).toEqual([0, 1]);
      const after = (await snapshot(s2.client)).held.map((h) => h.claimId);
      expect(after).not.toContain(ga.claimId);
      expect(after).not.toContain(gb.claimId);
      await Promise.all([one.release(), two.release()]);
    },
  );

  it('a holder takes its claim back after the SIGKILL with its resume token: same claim, GPU ids and env', async () => {
    const dir = tempDir('berth-state-');
    const s1 = await serve(dir, ['--cpus', '2', '--gpus', '0-1']);
    const c = claim(s1.client, { cpus: 1, gpus: 1, env: { STUDY: 'a' } });
    const g = await c.granted;
    await kill(s1.child);
    await c.ended;

    const s2 = await serve(dir, ['--cpus', '2', '--gpus', '0-1', '--claim-hold', '30']);
    const wrong = resumeClaim(s2.client, g.claimId, 'A'.repeat(22));
    expect((await wrong.ended)?.code).toBe(status.NOT_FOUND);
    const r = resumeClaim(s2.client, g.claimId, g.resumeToken);
    const back = await r.granted;
    expect(back).toMatchObject({ claimId: g.claimId, machine: 'engine', allocation: g.allocation, resumed: true });
    expect(back.allocation?.env.STUDY).toBe('a');
    expect(s2.log()).not.toContain(g.resumeToken); // never logged
    await r.release();
    expect((await snapshot(s2.client)).held).toEqual([]);
  });

  it(
    'a journaled GPU worker counts during the restart hold: a gpus=1 ask waits for it instead of being ' +
      'clamped to the engine, and runs there once it is back',
    async () => {
      const dir = tempDir('berth-state-');
      const flags = ['--cpus', '2', '--gpus', ''];
      const s1 = await serve(dir, flags);
      const w1 = await worker(s1, 'gpu-a', ['--cpus', '2', '--gpus', '0-0']);
      await kill(w1); // the worker's host and the server go down together
      await kill(s1.child);

      const s2 = await serve(dir, [...flags, '--restart-hold', '30']);
      const c = claim(s2.client, { cpus: 1, gpus: 1 });
      const q = await c.queued;
      expect(q.detail).toContain('waiting for gpu-a to come back (restart hold');
      expect(q.wanted?.gpus).toBe(1); // it waits for the whole ask: not cut down to the GPU-less engine
      expect((await snapshot(s2.client)).waiting.map((w) => w.reason?.wanted?.gpus)).toEqual([1]);
      await worker(s2, 'gpu-a', ['--cpus', '2', '--gpus', '0-0']);
      const g = await c.granted;
      expect([g.machine, g.allocation?.gpuIds, g.clamped]).toEqual(['gpu-a', [0], false]);
      expect(g.allocation?.env.CUDA_VISIBLE_DEVICES).toBe('0');
      await c.release();
    },
  );

  it('a first start refuses an unknown required label at once; after a restart a journaled one is waited for', async () => {
    const dir = tempDir('berth-state-');
    const s1 = await serve(dir, ['--cpus', '1', '--gpus', '', '--reconnect-grace', '30']);
    const first = claim(s1.client, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
    const err = await first.ended;
    expect(err?.code).toBe(status.FAILED_PRECONDITION);
    expect(err?.details).toContain("no machine carries label 'tpu'");
    expect(first.responses).toEqual([]);
    const w = await worker(s1, 'tpu-1', ['--cpus', '1', '--gpus', '', '--labels', 'tpu']);
    await kill(w);
    await kill(s1.child);

    const s2 = await serve(dir, ['--cpus', '1', '--gpus', '', '--reconnect-grace', '30']);
    const again = claim(s2.client, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
    expect((await again.queued).detail).toContain('waiting for tpu-1 to come back (restart hold');
    // A label the journal never knew still fails at once after the restart.
    const other = claim(s2.client, { cpus: 1, label: 'fpga', policy: Policy.POLICY_REQUIRE });
    expect((await other.ended)?.code).toBe(status.FAILED_PRECONDITION);
    again.call.cancel();
  });

  it(
    'a label whose last worker left just before the SIGKILL is still coming back after the restart, for the rest ' +
      'of its reconnect grace (chaos found it failed at once)',
    async () => {
      const dir = tempDir('berth-state-');
      const flags = ['--cpus', '1', '--gpus', '', '--reconnect-grace', '30', '--worker-hold', '0.2'];
      const s1 = await serve(dir, flags);
      const w = await worker(s1, 'tpu-1', ['--cpus', '1', '--gpus', '', '--labels', 'tpu']);
      await kill(w);
      await until(async () => !(await snapshot(s1.client)).machines.some((m) => m.name === 'tpu-1')); // hold ran out
      const before = claim(s1.client, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
      await before.queued; // the running server waits: the label is within its reconnect grace
      before.call.cancel();
      await kill(s1.child);

      const s2 = await serve(dir, flags);
      const again = claim(s2.client, { cpus: 1, label: 'tpu', policy: Policy.POLICY_REQUIRE });
      const first = await Promise.race([again.queued.then(() => 'queued'), again.ended.then((e) => e?.details)]);
      expect(first).toBe('queued');
      again.call.cancel();
    },
  );

  it('a corrupt journal is refused with an error naming the directory, and changes nothing', async () => {
    const dir = tempDir('berth-state-');
    mkdirSync(join(dir, 'journal'));
    writeFileSync(join(dir, 'journal', 'data.mdb'), Buffer.alloc(64 * 1024, 0x5a));
    const r = await finished(spawnBerth(['serve', '--listen', '127.0.0.1:0', '--state-dir', dir]));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`journal ${join(dir, 'journal')}: cannot be opened`);
    expect(r.stderr).not.toContain('berth serving');
  });

  it('a state directory held by a live server is refused naming it and the holder', async () => {
    const dir = tempDir('berth-state-');
    const s1 = await serve(dir, ['--cpus', '1', '--gpus', '']);
    const r = await finished(spawnBerth(['serve', '--listen', '127.0.0.1:0', '--state-dir', dir]));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`state directory ${dir} belongs to another berth serve (pid ${s1.child.pid}`);
    expect((await snapshot(s1.client)).machines.length).toBe(1); // the first server goes on
  });
});
