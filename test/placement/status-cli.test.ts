import { afterEach, describe, expect, it } from 'vitest';
import { claim, fakeWorker } from '../support/claims.js';
import { finished, runBerth, spawnBerth } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';

describe('berth status', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function knownState() {
    t = await startServer({ cpus: 2 });
    const w = fakeWorker(t.worker, 'gpu1', { cpus: 8, gpuIds: [0, 1, 2], ramMb: 4096 }, ['gpu']);
    await w.welcomed;
    const held = claim(t.placement, { cpus: 2, gpus: 1, node: 'train.fit' });
    await held.granted;
    const engineHeld = claim(t.placement, { cpus: 2, node: 'prep.load' });
    await engineHeld.granted;
    const waiting = claim(t.placement, { cpus: 7, node: 'prep.clean', runId: 'r7' }); // only gpu1 can ever hold 7 cores
    await waiting.queued;
    return { w, held, engineHeld, waiting };
  }

  it(
    'prints every machine with free of total and free GPU ids, the waiting claims with reasons, ' + 'and held claims',
    async () => {
      const s = await knownState();
      const r = await runBerth(['status', '--server', t!.address]);
      expect(r.code).toBe(0);
      const lines = r.stdout.split('\n');
      expect(lines.find((l) => l.startsWith('engine'))).toMatch(/engine\s+engine\s+-\s+0\/2\s+0\/0/);
      expect(lines.find((l) => l.startsWith('gpu1'))).toMatch(/gpu1\s+worker\s+gpu\s+6\/8\s+2\/3\s+1,2\s+4096\/4096/);
      expect(r.stdout).toContain('waiting: 1');
      expect(lines.find((l) => l.includes('prep.clean'))).toMatch(/prep\.clean\s+r7\s+7 cpu\(s\)/);
      expect(lines.find((l) => l.includes('prep.clean'))).toMatch(/\d+\.\ds$/);
      expect(r.stdout).toMatch(/train\.fit\s+gpu1\s+2\s+0/);
      s.waiting.call.cancel();
      await Promise.all([s.held.release(), s.engineHeld.release()]);
      s.w.close();
    },
  );

  it('--json prints the snapshot for scripts', async () => {
    const s = await knownState();
    const r = await runBerth(['status', '--server', t!.address, '--json']);
    expect(r.code).toBe(0);
    const snap = JSON.parse(r.stdout);
    expect(snap.machines.map((m: { name: string }) => m.name)).toEqual(['engine', 'gpu1']);
    expect(snap.waiting[0].node).toBe('prep.clean');
    expect(snap.machines[1].freeGpuIds).toEqual([1, 2]);
    s.waiting.call.cancel();
    await Promise.all([s.held.release(), s.engineHeld.release()]);
    s.w.close();
  });

  it('--watch redraws on each event', async () => {
    t = await startServer({ cpus: 2 });
    const child = spawnBerth(['status', '--server', t.address, '--watch']);
    const done = finished(child);
    let out = '';
    const seen = (re: RegExp) =>
      new Promise<void>((resolve) => {
        const check = () => re.test(out) && resolve();
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          check();
        });
        check();
      });
    await seen(/held: none/);
    const c = claim(t.placement, { cpus: 1, node: 'watch.me' });
    await c.granted;
    await seen(/watch\.me\s+engine/);
    await c.release();
    child.kill('SIGINT');
    expect((await done).code).toBe(0);
  });

  it('an unreachable server exits 1 naming the address', async () => {
    const r = await runBerth(['status', '--server', '127.0.0.1:1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('127.0.0.1:1');
    expect(r.stderr).toContain('ECONNREFUSED');
    expect(r.stderr.trim()).not.toMatch(/Resolution note:$/);
  });

  it(
    '--watch exits 1 saying the server went away when it stops, ' + 'and --json with --watch prints JSON lines',
    async () => {
      t = await startServer({ cpus: 2 });
      const child = spawnBerth(['status', '--server', t.address, '--watch', '--json']);
      const done = finished(child);
      let out = '';
      await new Promise<void>((resolve) =>
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve();
        }),
      );
      await t.close();
      t = undefined;
      const r = await done;
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('went away');
      const lines = r.stdout.trim().split('\n');
      for (const l of lines) expect(JSON.parse(l).machines[0].name).toBe('engine');
    },
  );
});
