/**
 * A running call survives a `berth serve` SIGKILL (issue 19, SPEC S1-S4): the journal knows the call and its
 * worker, the restarted server holds them for the restart hold, the same agent instance re-attaches listing the
 * call and resends what it kept, and the caller follows the call again by id from the last event it saw — every
 * line once, the node run once, then its result. Real `berth serve` and `berth worker` processes.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunRequest, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { HistoryRequest, type HistoryResponse } from '../../generated/ts/berth/v1/history.js';
import { spawnBerth, waitForLine } from '../support/cli.js';
import { LinkProxy } from '../support/link-proxy.js';
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
  extra: string[] = [],
): Promise<{ child: ChildProcess; client: PlacementServiceClient }> {
  const child = spawnBerth([
    'serve',
    '--listen',
    address,
    '--state-dir',
    stateDir,
    '--cpus',
    '1',
    '--gpus',
    '',
    ...extra,
  ]);
  if (process.env.DEBUG_SERVE) child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  cleanup.push(() => kill(child));
  await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client };
}

const seqOf = (rs: RunResponse[]) => rs.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));

describe('a call survives a server SIGKILL (SPEC S4)', () => {
  it('the restarted server re-binds the running call from the journal; the caller follows it again and gets ' +
    'every line once and the result, and the node ran once', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = tempDir('berth-state-');
    const dir = tempDir('berth-call-');
    const go = join(dir, 'go');
    const runs = join(dir, 'runs');
    const s1 = await serve(address, state);
    const agent = spawnBerth([
      'worker',
      '--server',
      address,
      '--name',
      'w1',
      '--labels',
      'w',
      '--cpus',
      '2',
      '--gpus',
      '',
      '--state-dir',
      tempDir('berth-w-'),
    ]);
    cleanup.push(() => kill(agent));
    await until(async () => (await snapshot(s1.client)).machines.some((m) => m.name === 'w1'));
    const script =
      `echo ran >> '${runs}'; for i in 1 2 3; do echo $i; done; ` +
      `while [ ! -f '${go}' ]; do sleep 0.05; done; for i in 4 5 6; do echo $i; done`;
    const req: RunRequest = { ...runRequest({ label: 'w', runId: 'sv', argv: ['sh', '-c', script] }) };
    const first = run(s1.client, req);
    await until(() => outputLines(first).length >= 3);
    const seen = seqOf(first.responses).at(-1) ?? 0;

    await kill(s1.child); // a crash: no drain, nothing released
    await first.done;
    writeFileSync(go, ''); // lines 4..6 come while no server runs: the agent keeps them
    const s2 = await serve(address, state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    const again = await run(s2.client, { ...runRequest({}), follow: { callId: 'sv:flow.node', afterSeq: seen } }).done;
    expect(again.error).toBeNull();
    const lines = [...outputLines(first), ...outputLines(again)].map((l) => l.line);
    expect(lines).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(readFileSync(runs, 'utf8')).toBe('ran\n'); // one call id, one execution
    // the Run's own claim lasted as long as its call, and is given back with it
    await until(async () => (await snapshot(s2.client)).held.length === 0);
    expect(existsSync(go)).toBe(true);
    // and the call that ran through the restart is in the history once it ended (SPEC S9), timed from its start
    const listed = await new Promise<HistoryResponse>((resolve, reject) =>
      s2.client.history(HistoryRequest.fromPartial({ runId: 'sv' }), (err, res) => (err ? reject(err) : resolve(res))),
    );
    expect(listed.entries.map((e) => [e.id, e.state])).toEqual([['sv:flow.node', 'succeeded']]);
    expect(listed.entries[0].endedMs - listed.entries[0].startedMs).toBeGreaterThan(0);
  }, 60_000);
  it('events the server handed to its caller (acknowledged to the agent) but the caller never got are not lost ' +
    'with the server: the agent sends them again to the restarted server, and the caller gets them', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = tempDir('berth-state-');
    const dir = tempDir('berth-call-');
    const [go1, go2, runs] = [join(dir, 'go1'), join(dir, 'go2'), join(dir, 'runs')];
    const s1 = await serve(address, state);
    const agent = spawnBerth([
      'worker',
      '--server',
      address,
      '--name',
      'w1',
      '--labels',
      'w',
      '--cpus',
      '2',
      '--gpus',
      '',
      '--state-dir',
      tempDir('berth-w-'),
    ]);
    cleanup.push(() => kill(agent));
    await until(async () => (await snapshot(s1.client)).machines.some((m) => m.name === 'w1'));
    // The caller's link goes through a proxy that can stop delivering what the server sends.
    const link = new LinkProxy(address);
    const caller = new PlacementServiceClient(await link.start(), credentials.createInsecure());
    cleanup.push(() => link.close());
    cleanup.push(() => caller.close());
    const wait = (f: string) => `while [ ! -f '${f}' ]; do sleep 0.05; done`;
    const script =
      `echo ran >> '${runs}'; for i in 1 2 3; do echo $i; done; ${wait(go1)}; for i in 4 5 6; do echo $i; done; ` +
      `${wait(go2)}; for i in 7 8 9; do echo $i; done`;
    const req: RunRequest = {
      ...runRequest({ label: 'w', runId: 'ak', argv: ['sh', '-c', script] }),
      disconnectGraceMs: 30_000,
    };
    const first = run(caller, req);
    await until(() => outputLines(first).length >= 3);
    const seen = seqOf(first.responses).at(-1) ?? 0;
    link.freeze(); // lines 4..6 will be written to the caller's socket, and never reach it
    writeFileSync(go1, '');
    await new Promise((r) => setTimeout(r, 1500)); // the server hands them over and acknowledges them (every 200 ms)
    await kill(s1.child);
    link.cut();
    await first.done;
    expect(outputLines(first).map((l) => l.line)).toEqual(['1', '2', '3']);

    const s2 = await serve(address, state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    writeFileSync(go2, '');
    const again = await run(s2.client, { ...runRequest({}), follow: { callId: 'ak:flow.node', afterSeq: seen } }).done;
    expect(again.error).toBeNull();
    expect(outputLines(again).map((l) => l.line)).toEqual(['4', '5', '6', '7', '8', '9']);
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    expect(readFileSync(runs, 'utf8')).toBe('ran\n');
  }, 60_000);
  it('a call whose caller went away within its disconnect grace is still in flight after a SIGKILL: the journal ' +
    'did not take the caller leaving for the call ending, and the caller follows it on the restarted server', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = tempDir('berth-state-');
    const go = join(tempDir('berth-call-'), 'go');
    const s1 = await serve(address, state);
    const agent = spawnBerth([
      'worker',
      '--server',
      address,
      '--name',
      'w1',
      '--labels',
      'w',
      '--cpus',
      '2',
      '--gpus',
      '',
      '--state-dir',
      tempDir('berth-w-'),
    ]);
    cleanup.push(() => kill(agent));
    await until(async () => (await snapshot(s1.client)).machines.some((m) => m.name === 'w1'));
    const script = `echo 1; while [ ! -f '${go}' ]; do sleep 0.05; done; echo 2`;
    const req: RunRequest = {
      ...runRequest({ label: 'w', runId: 'cg', argv: ['sh', '-c', script] }),
      disconnectGraceMs: 30_000,
    };
    const first = run(s1.client, req);
    await until(() => outputLines(first).length >= 1);
    const seen = seqOf(first.responses).at(-1) ?? 0;
    first.cancel(); // the caller goes away; the call runs on for its grace
    await first.done;
    await new Promise((r) => setTimeout(r, 500)); // what the server journals on the caller leaving is durable
    await kill(s1.child);

    const s2 = await serve(address, state);
    await until(async () => (await snapshot(s2.client)).machines.find((m) => m.name === 'w1')?.state === 1);
    writeFileSync(go, '');
    const again = await run(s2.client, { ...runRequest({}), follow: { callId: 'cg:flow.node', afterSeq: seen } }).done;
    expect(again.error).toBeNull();
    expect(outputLines(again).map((l) => l.line)).toEqual(['2']);
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
  }, 60_000);
  it('a call on the engine host without its keeper dies with the server; following it after the restart says it ' +
    'was lost (not NOT_FOUND, which chaos found)', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = tempDir('berth-state-');
    const s1 = await serve(address, state, ['--engine-keeper', 'off']);
    const first = run(s1.client, runRequest({ runId: 'en', argv: ['sh', '-c', 'echo 1; sleep 30'] }));
    await until(() => outputLines(first).length >= 1);
    await new Promise((r) => setTimeout(r, 500)); // the call's start is durable
    await kill(s1.child);
    await first.done;
    const s2 = await serve(address, state, ['--engine-keeper', 'off']);
    const again = await run(s2.client, { ...runRequest({}), follow: { callId: 'en:flow.node', afterSeq: 1 } }).done;
    expect(again.error?.code).toBe(status.UNAVAILABLE);
    expect(again.error?.details).toContain('was lost when the server restarted: it ran on the engine host');
  }, 60_000);
});
