/**
 * A call that runs through a `berth serve` SIGKILL keeps its age (issue 19 item 10, SPEC S4): after the restart,
 * `berth status` and GetSnapshot time it from its first start, which the journal kept, not from the restart.
 * Real `berth serve` and `berth worker` processes.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { runBerth, spawnBerth, waitForLine } from '../support/cli.js';
import { closedPort } from '../support/ports.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
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

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

/** `berth serve` on `address` with its journal in `stateDir`; resolves with a client once it serves. */
async function serve(
  address: string,
  stateDir: string,
): Promise<{ child: ChildProcess; client: PlacementServiceClient }> {
  const child = spawnBerth(['serve', '--listen', address, '--state-dir', stateDir, '--cpus', '1', '--gpus', '']);
  cleanup.push(() => kill(child));
  await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client };
}

describe('a call keeps its age across a server SIGKILL', () => {
  it('berth status and GetSnapshot count its ELAPSED from its first start, not from the restart', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = tempDir('berth-state-');
    const go = join(tempDir('berth-call-'), 'go');
    const s1 = await serve(address, state);
    const agent = spawnBerth(
      ['worker', '--server', address, '--name', 'w1', '--labels', 'w', '--cpus', '1', '--gpus', ''].concat([
        '--state-dir',
        tempDir('berth-w-'),
      ]),
    );
    cleanup.push(() => kill(agent));
    await until(async () => (await snapshot(s1.client)).machines.some((m) => m.name === 'w1'));
    // a line every 0.1 s until told to stop: the call has run a while (line 10) before the server dies
    const script = `i=0; while [ ! -f '${go}' ]; do i=$((i+1)); echo $i; sleep 0.1; done`;
    const first = run(s1.client, runRequest({ label: 'w', runId: 'el', argv: ['sh', '-c', script] }));
    await until(() => outputLines(first).length >= 1);
    const runningBy = Date.now(); // the call started before this
    await until(() => outputLines(first).length >= 10);
    await kill(s1.child);
    await first.done;

    const s2 = await serve(address, state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const askedAt = Date.now();
    const call = (await snapshot(s2.client)).calls.find((c) => c.callId === 'el:flow.node');
    expect(call?.elapsedMs).toBeGreaterThanOrEqual(askedAt - runningBy);
    const shownAt = Date.now();
    const shown = await runBerth(['status', '--server', address]);
    expect(shown.code).toBe(0);
    const row = shown.stdout.split('\n').find((l) => l.startsWith('el:flow.node'));
    const elapsed = Number(/(\d+\.\d)s\s*$/.exec(row ?? '')?.[1]);
    expect(elapsed * 1000 + 100).toBeGreaterThanOrEqual(shownAt - runningBy); // shown to a tenth of a second

    writeFileSync(go, '');
    const rest = await run(s2.client, { ...runRequest({}), follow: { callId: 'el:flow.node', afterSeq: 0 } }).done;
    expect(terminal(rest)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
  }, 90_000);
});
