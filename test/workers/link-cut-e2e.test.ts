/**
 * Issue 19 items 1 and 2 end to end: a real `berth worker` process attached to the real server through a TCP
 * proxy on loopback whose link the test cuts. A command whose Run asked disconnect_grace_ms 10000 keeps running
 * through a 3 s cut; the caller is told DISCONNECTED then RECONNECTED and gets every output line exactly once, in
 * order, then the result.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerLinkState } from '../../generated/ts/berth/v1/placement.js';
import { finished, spawnBerth } from '../support/cli.js';
import { LinkProxy } from '../support/link-proxy.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

const LINES = 40;

describe('a real berth worker through a cut link', () => {
  it('a running command keeps running through a 3 s cut when its Run asked disconnect_grace_ms 10000; ' +
    'every line once, in order', async () => {
    const s = await startServer({ cpus: 1 });
    open.push(() => s.close());
    const proxy = new LinkProxy(s.address);
    const via = await proxy.start();
    open.push(() => proxy.close());
    const stateDir = mkdtempSync(join(tmpdir(), 'berth-cut-'));
    open.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const child = spawnBerth([
      'worker',
      '--server',
      via,
      '--name',
      'w1',
      '--labels',
      'w',
      '--cpus',
      '2',
      '--gpus',
      '',
      '--state-dir',
      stateDir,
    ]);
    const exited = finished(child);
    open.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    });
    await until(async () => (await snapshot(s.placement)).machines.some((m) => m.name === 'w1'));

    const script = `for i in $(seq 1 ${LINES}); do echo line-$i; sleep 0.2; done`;
    const r = run(s.placement, runRequest({ label: 'w', argv: ['sh', '-c', script], disconnectGraceMs: 10_000 }));
    await until(() => outputLines(r).length >= 5);
    proxy.cut();
    await until(() => r.responses.some((x) => x.kind?.$case === 'link'));
    await new Promise((resolve) => setTimeout(resolve, 3000)); // the cut
    const linesDuringCut = outputLines(r).length;
    proxy.restore();
    const o = await r.done;

    expect(o.error).toBeNull();
    expect(terminal(o)?.$case).toBe('result');
    expect(outputLines(o).map((l) => l.line)).toEqual(Array.from({ length: LINES }, (_, i) => `line-${i + 1}`));
    expect(linesDuringCut).toBeLessThan(LINES); // the command was still running when the link came back
    const links = o.responses.flatMap((x) => (x.kind?.$case === 'link' ? [x.kind.value.state] : []));
    expect(links).toEqual([
      WorkerLinkState.WORKER_LINK_STATE_DISCONNECTED,
      WorkerLinkState.WORKER_LINK_STATE_RECONNECTED,
    ]);
    expect(s.invariantErrors).toEqual([]);
  }, 60_000);
});
