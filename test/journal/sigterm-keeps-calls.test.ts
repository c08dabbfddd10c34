/**
 * A server stopping is not the caller leaving (SPEC S5): a Run on a worker whose caller asked no grace
 * (disconnect_grace_ms 0, the default) survives a SIGTERM restart of `berth serve` — the Run's stream cut by the
 * server's own halt neither stops nor fails the call, nor is journaled as cancelled — and the caller, following
 * the call again by id on the restarted server, gets every line once and its result. Real `berth serve` and
 * `berth worker` processes.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunRequest, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
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
  if (process.env.DEBUG_SERVE) child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  cleanup.push(() => kill(child));
  await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client };
}

const seqOf = (rs: RunResponse[]) => rs.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));

describe('a SIGTERM restart keeps a call whose caller asked no grace (SPEC S5)', () => {
  it('the Run cut by the halt is not cancelled: followed again by id on the restarted server, it ends with its ' +
    'result, every line once, the node ran once', async () => {
    const t = await setUp('st');
    const exited = finished(t.s1.child);
    t.s1.child.kill('SIGTERM'); // a routine restart: stops the control plane, leaves the work running
    expect((await t.first.done).error?.code).toBe(status.UNAVAILABLE);
    expect((await exited).code).toBe(0);
    writeFileSync(t.go, ''); // lines 4..6 come while no server runs: the agent keeps them
    const s2 = await serve(t.address, t.state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const again = await run(s2.client, { ...runRequest({}), follow: { callId: 'st:flow.node', afterSeq: t.seen } })
      .done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    const lines = [...outputLines(t.first), ...outputLines(again)].map((l) => l.line);
    expect(lines).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(readFileSync(t.runs, 'utf8')).toBe('ran\n'); // one call id, one execution
  }, 60_000);

  it('a call re-bound after a crash and followed again there is not journaled as cancelled when that server gets ' +
    'SIGTERM: the next start still has it running, and it ends with its result', async () => {
    const t = await setUp('rb');
    await kill(t.s1.child); // a crash: the next server re-binds the call from the journal
    await t.first.done;
    const s2 = await serve(t.address, t.state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const follow = { callId: 'rb:flow.node', afterSeq: t.seen };
    const second = run(s2.client, { ...runRequest({}), follow }); // a follow: no grace of its own
    await until(() => second.responses.some((r) => r.kind?.$case === 'started'));
    const exited = finished(s2.child);
    s2.child.kill('SIGTERM');
    expect((await second.done).error?.code).toBe(status.UNAVAILABLE);
    expect((await exited).code).toBe(0);
    writeFileSync(t.go, '');
    const s3 = await serve(t.address, t.state);
    await until(async () => (await snapshot(s3.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const again = await run(s3.client, { ...runRequest({}), follow }).done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(again).map((l) => l.line)).toEqual(['4', '5', '6']);
    expect(readFileSync(t.runs, 'utf8')).toBe('ran\n');
  }, 60_000);

  it('a call re-bound after a crash keeps its Run grace (SPEC S3): its follower leaving does not stop it, and a ' +
    'follow within the grace gets the rest and the result', async () => {
    const t = await setUp('gr', 30_000);
    await kill(t.s1.child); // a crash: the next server re-binds the call from the journal
    await t.first.done;
    const s2 = await serve(t.address, t.state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const follow = { callId: 'gr:flow.node', afterSeq: t.seen };
    const second = run(s2.client, { ...runRequest({}), follow });
    await until(() => second.responses.some((r) => r.kind?.$case === 'started'));
    second.cancel(); // the follower's link breaks: within the Run's 30 s grace the call keeps running
    expect((await second.done).error?.code).toBe(status.CANCELLED);
    const third = run(s2.client, { ...runRequest({}), follow });
    await until(() => third.responses.some((r) => r.kind?.$case === 'started'));
    expect(terminal(third)).toBeUndefined();
    writeFileSync(t.go, '');
    const again = await third.done;
    expect(again.error).toBeNull();
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(outputLines(again).map((l) => l.line)).toEqual(['4', '5', '6']);
    expect(readFileSync(t.runs, 'utf8')).toBe('ran\n');
  }, 60_000);
});

/**
 * A server, a real agent w1 and a Run (grace `disconnectGraceMs`, default 0) of run id `runId` that printed 1..3 and
 * waits for `go`.
 */
async function setUp(runId: string, disconnectGraceMs = 0) {
  const address = `127.0.0.1:${await closedPort()}`;
  const state = tempDir('berth-state-');
  const dir = tempDir('berth-call-');
  const go = join(dir, 'go');
  const runs = join(dir, 'runs');
  const s1 = await serve(address, state);
  const args = ['worker', '--server', address, '--name', 'w1', '--labels', 'w', '--cpus', '2', '--gpus', ''];
  const agent = spawnBerth([...args, '--state-dir', tempDir('berth-w-')]);
  cleanup.push(() => kill(agent));
  await until(async () => (await snapshot(s1.client)).machines.some((m) => m.name === 'w1'));
  const script =
    `echo ran >> '${runs}'; for i in 1 2 3; do echo $i; done; ` +
    `while [ ! -f '${go}' ]; do sleep 0.05; done; for i in 4 5 6; do echo $i; done`;
  // disconnect_grace_ms 0 (the default): the caller leaving would cancel it, the server stopping must not
  const req: RunRequest = { ...runRequest({ label: 'w', runId, argv: ['sh', '-c', script] }), disconnectGraceMs };
  const first = run(s1.client, req);
  await until(() => outputLines(first).length >= 3);
  return { address, state, go, runs, s1, first, seen: seqOf(first.responses).at(-1) ?? 0 };
}
