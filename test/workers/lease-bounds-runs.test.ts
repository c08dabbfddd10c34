/**
 * Issue 10 item 1 (SPEC R5): a claim's lease covers the runs inside it. Releasing the claim cancels
 * them (CANCELLED "claim <id> released"), Released is answered at once, and the GPU is granted to
 * the next client only once the first process is gone — on a real `berth worker` and on the engine host.
 */
import { status } from '@grpc/grpc-js';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim } from '../support/claims.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest, type RunHandle } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf } from '../support/snapshot.js';
import { until } from '../support/until.js';
import { processAlive } from '../support/process-groups.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** True while `pid` runs (a zombie awaiting its reaper counts as gone). */
function logLines(h: RunHandle): string[] {
  return h.responses.flatMap((r) =>
    r.kind?.$case === 'event' && r.kind.value.kind?.$case === 'log' ? [r.kind.value.kind.value.line] : [],
  );
}

/**
 * The scenario on machine `machine` of `t`: A holds GPU 0 and runs a command inside the claim that
 * takes 0.5 s to die after SIGTERM; B waits for the GPU; A releases.
 */
async function releaseWithRunInFlight(t: TestServer, machine: string, label: string) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-lease-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  const pidFile = join(dir, 'pid');
  const a = claim(t.placement, {
    cpus: 1,
    gpus: 1,
    label,
    policy: label ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED,
  });
  const ga = await a.granted;
  expect(ga.machine).toBe(machine);
  expect(ga.allocation?.gpuIds).toEqual([0]);
  // The process traps SIGTERM and lingers 0.5 s before exiting, as a real job cleaning up would.
  const script =
    `echo $$ > ${pidFile}; trap 'sleep 0.5; exit 0' TERM; ` +
    `echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; sleep 60 & wait`;
  const r = run(t.placement, runRequest({ runId: 'lease', claimId: ga.claimId, argv: ['sh', '-c', script] }));
  await until(() => logLines(r).length > 0 && existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'));
  expect(logLines(r)[0]).toBe('CUDA_VISIBLE_DEVICES=0');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  expect(processAlive(pid)).toBe(true);

  const b = claim(t.placement, {
    cpus: 1,
    gpus: 1,
    label,
    policy: label ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED,
  });
  await b.queued;
  let aliveAtGrant: boolean | undefined;
  let releasedBeforeGrant: boolean | undefined;
  const bGranted = b.granted.then((g) => {
    aliveAtGrant = processAlive(pid); // read at the moment the grant arrives
    releasedBeforeGrant = a.responses.some((x) => x.kind?.$case === 'released');
    return g;
  });
  await a.release(); // Released, then the stream closes OK
  expect(a.responses.at(-1)?.kind).toEqual({ $case: 'released', value: { claimId: ga.claimId } });

  const o = await r.done;
  expect(o.error?.code).toBe(status.CANCELLED);
  expect(o.error?.details).toContain(`claim ${ga.claimId} released`);

  const gb = await bGranted;
  expect(gb.machine).toBe(machine);
  expect(gb.allocation?.gpuIds).toEqual([0]);
  expect(releasedBeforeGrant).toBe(true);
  expect(aliveAtGrant).toBe(false);
  await b.release();
  await until(() => !processAlive(pid));
}

describe("a claim's lease covers the runs inside it (SPEC R5)", () => {
  it(
    'on a real berth worker: Release cancels the run inside the claim, ' +
      'and GPU 0 is granted again only once its process is gone',
    async () => {
      const t = await startServer({ cpus: 1 });
      open.push(() => t.close());
      const child = spawnBerth([
        'worker',
        '--server',
        t.address,
        '--name',
        'w1',
        '--labels',
        'w',
        '--cpus',
        '2',
        '--gpus',
        '0-0',
        '--grace',
        '5',
        '--log-level',
        'info',
      ]);
      const done = finished(child);
      open.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        return done;
      });
      await waitForLine(child, /attached to server/);
      await releaseWithRunInFlight(t, 'w1', 'w');
      expect(await freeOf(t.placement, 'w1')).toEqual({ cpus: 2, gpus: 1 });
      expect(t.invariantErrors).toEqual([]);
    },
  );

  it(
    'on the engine host: Release cancels the run inside the claim, ' +
      'and GPU 0 is granted again only once its process is gone',
    async () => {
      const t = await startServer({ cpus: 2, gpuIds: [0], flags: { grace: 5 } });
      open.push(() => t.close());
      await releaseWithRunInFlight(t, 'engine', '');
      expect(await freeOf(t.placement, 'engine')).toEqual({ cpus: 2, gpus: 1 });
      expect(t.invariantErrors).toEqual([]);
    },
  );

  it('a drain ends the claim stream but the run inside it keeps the drain grace and completes (SPEC R3)', async () => {
    const t = await startServer({ cpus: 2, gpuIds: [0] });
    open.push(() => t.close());
    const a = claim(t.placement, { cpus: 1, gpus: 1 });
    const ga = await a.granted;
    const r = run(
      t.placement,
      runRequest({ runId: 'drain', claimId: ga.claimId, argv: ['sh', '-c', 'echo started; sleep 1; echo done'] }),
    );
    await until(() => logLines(r).length > 0);
    const stopped = t.server.stop(10_000);
    expect((await a.ended)?.details).toContain('server is draining');
    const o = await r.done;
    expect(o.error).toBeNull();
    expect(logLines(r)).toEqual(['started', 'done']);
    await stopped;
  });

  it(
    'a half-closed claim stream ends the run inside it the same way, ' +
      'and its books come back once the process is gone',
    async () => {
      const t = await startServer({ cpus: 2, gpuIds: [0] });
      open.push(() => t.close());
      const a = claim(t.placement, { cpus: 1, gpus: 1 });
      const ga = await a.granted;
      const r = run(
        t.placement,
        runRequest({ runId: 'hc', claimId: ga.claimId, argv: ['sh', '-c', 'echo $$; exec sleep 60'] }),
      );
      await until(() => logLines(r).length > 0);
      const pid = Number(logLines(r)[0]);
      a.call.end();
      expect(await a.ended).toBeNull();
      const o = await r.done;
      expect(o.error?.code).toBe(status.CANCELLED);
      expect(o.error?.details).toContain(`claim ${ga.claimId} released`);
      await until(() => !processAlive(pid));
      const b = claim(t.placement, { cpus: 2, gpus: 1 });
      expect((await b.granted).allocation?.gpuIds).toEqual([0]);
      await b.release();
    },
  );
});
