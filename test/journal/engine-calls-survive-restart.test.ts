/**
 * An engine-host call survives a `berth serve` restart (issue 19 item 5): the engine host's commands run in the
 * engine keeper, a local `berth worker` the server starts; after a SIGKILL, or a plain SIGTERM stop, of the server
 * the call runs on, the restarted server re-adopts the keeper, and the caller following the call by id gets every
 * line once and the exit code. Real `berth serve` processes (dist/).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { liveKeeper } from '../../src/workers/keeper-process.js';
import { spawnBerth, waitForLine } from '../support/cli.js';
import { closedPort } from '../support/ports.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { groupLives } from '../support/process-groups.js';
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

function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

async function kill(child: ChildProcess, sig: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  const gone = ended(child);
  if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  await gone;
}

/** `berth serve` on `address` with its journal (and its engine keeper) under `stateDir`. */
async function serve(address: string, stateDir: string, flags: string[] = []) {
  const child = spawnBerth([
    ...['serve', '--listen', address, '--state-dir', stateDir, '--cpus', '2', '--gpus', ''],
    ...flags,
  ]);
  cleanup.push(() => kill(child));
  await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client };
}

/** Ends the keeper of `stateDir` (SIGKILL: its watchdogs end its calls' groups) at the end of the test. */
function endKeeperAfter(stateDir: string): void {
  cleanup.push(async () => {
    const pid = liveKeeper(join(stateDir, 'engine-keeper'));
    if (pid === undefined) return;
    process.kill(pid, 'SIGKILL');
    await until(() => liveKeeper(join(stateDir, 'engine-keeper')) === undefined);
  });
}

const seqOf = (rs: RunResponse[]) => rs.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));

/** A command printing 1..3, waiting for `go`, printing 4..6 and exiting 3; each start appends to `runs`. */
function script(dir: string) {
  const go = join(dir, 'go');
  const runs = join(dir, 'runs');
  const sh =
    `echo ran >> '${runs}'; for i in 1 2 3; do echo $i; done; ` +
    `while [ ! -f '${go}' ]; do sleep 0.05; done; for i in 4 5 6; do echo $i; done; exit 3`;
  return { go, runs, argv: ['sh', '-c', sh] };
}

describe('an engine-host call outlives berth serve (issue 19 item 5)', () => {
  for (const [how, sig] of [
    ['a SIGKILL of the server', 'SIGKILL'],
    ['a plain stop (SIGTERM)', 'SIGTERM'],
  ] as const) {
    it(`after ${how} the command keeps running; the restarted server re-adopts it and the caller following it gets ` +
      'every line once and the exit code, and it ran once', async () => {
      const address = `127.0.0.1:${await closedPort()}`;
      const state = tempDir('berth-state-');
      endKeeperAfter(state);
      const s = script(tempDir('berth-call-'));
      const s1 = await serve(address, state);
      const first = run(s1.client, runRequest({ runId: 'eh', argv: s.argv }));
      await until(() => outputLines(first).length >= 3, 30_000);
      const seen = seqOf(first.responses).at(-1) ?? 0;

      await kill(s1.child, sig);
      if (sig === 'SIGTERM') expect(s1.child.exitCode).toBe(0);
      await first.done;
      expect(liveKeeper(join(state, 'engine-keeper'))).toBeDefined(); // the call's keeper runs on
      writeFileSync(s.go, ''); // lines 4..6 come while no server runs: the keeper keeps them
      const s2 = await serve(address, state);
      const again = await run(s2.client, {
        ...runRequest({}),
        follow: { callId: 'eh:flow.node', afterSeq: seen },
      }).done;
      expect(again.error).toBeNull();
      const lines = [...outputLines(first), ...outputLines(again)].map((l) => l.line);
      expect(lines).toEqual(['1', '2', '3', '4', '5', '6']);
      expect(terminal(again)).toMatchObject({ $case: 'failure', value: { type: 'ExitCode' } });
      expect(readFileSync(s.runs, 'utf8')).toBe('ran\n'); // one call id, one execution
    }, 60_000);
  }

  const drainName = "a drain (--on-stop drain) stops the keeper's command after the grace; a second signal ends it";
  it(drainName, async () => {
    const state = tempDir('berth-state-');
    endKeeperAfter(state);
    const termIgnoring = ['sh', '-c', 'trap "" TERM; echo $$; sleep 340'];
    const pgidOf = async (r: ReturnType<typeof run>) => {
      await until(() => outputLines(r).length >= 1, 30_000);
      const pgid = Number(outputLines(r)[0].line);
      cleanup.push(() => groupLives(pgid) && process.kill(-pgid, 'SIGKILL'));
      return pgid;
    };
    // drain: the call is cancelled (SIGTERM, ignored, SIGKILL after --grace 0.5) and the server exits 0 after it
    const address = `127.0.0.1:${await closedPort()}`;
    const d = await serve(address, state, ['--on-stop', 'drain', '--grace', '0.5']);
    const first = run(d.client, runRequest({ runId: 'dr', argv: termIgnoring }));
    const pgid = await pgidOf(first);
    const exited = ended(d.child);
    d.child.kill('SIGTERM');
    await exited;
    expect(d.child.exitCode).toBe(0);
    await until(() => !groupLives(pgid), 10_000);
    expect((await first.done).error).not.toBeNull();
    // a second signal while draining (grace 30 s): the keeper is SIGKILLed, its watchdogs end the call's group
    const k = await serve(address, state, ['--on-stop', 'drain', '--grace', '30']);
    const second = run(k.client, runRequest({ runId: 'ks', argv: termIgnoring }));
    const pgid2 = await pgidOf(second);
    const gone = ended(k.child);
    k.child.kill('SIGTERM');
    await waitForLine(k.child, /berth draining/);
    k.child.kill('SIGTERM');
    await gone;
    expect(k.child.exitCode).toBe(130);
    await until(() => !groupLives(pgid2), 10_000);
    await second.done;
  }, 60_000);
});
