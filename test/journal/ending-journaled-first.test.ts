/**
 * The ending of a call is journaled before its caller is told (SPEC S4, issue 19): the server is SIGKILLed the
 * moment the caller receives the Result (or a Failure), and after the restart a follow by call id answers that
 * ending, not NOT_FOUND or "lost". A real `berth serve` process; the engine host runs the calls.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunRequest, type RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { spawnBerth, waitForLine } from '../support/cli.js';
import { closedPort } from '../support/ports.js';
import { kinds, run, runRequest, terminal } from '../support/run-client.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** `berth serve` on `address` with its journal in `stateDir`; resolves with it and a client once it serves. */
async function serve(
  address: string,
  stateDir: string,
): Promise<{ child: ChildProcess; client: PlacementServiceClient }> {
  const child = spawnBerth(['serve', '--listen', address, '--state-dir', stateDir, '--cpus', '2', '--gpus', '']);
  cleanup.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  });
  await waitForLine(child, /"msg":"berth serving"/);
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { child, client };
}

/** Runs `req` and SIGKILLs `server` in the same turn as its ending reaches the caller; resolves with that ending. */
function runThenCrash(client: PlacementServiceClient, server: ChildProcess, req: RunRequest): Promise<RunResponse> {
  const gone = new Promise((r) => server.once('exit', r));
  return new Promise((resolve, reject) => {
    const call = client.run(req);
    call.on('data', (r: RunResponse) => {
      if (r.kind?.$case !== 'result' && r.kind?.$case !== 'failure') return;
      server.kill('SIGKILL'); // before anything else happens in this process
      void gone.then(() => resolve(r));
    });
    call.on('error', () => {}); // the stream breaks with the server
    call.on('status', (s) => s.code === 0 || gone.then(() => reject(new Error('no ending before the crash'))));
  });
}

describe('an ending is journaled before the caller gets it', () => {
  it('a server SIGKILLed as its caller receives the result (or failure) still answers that ending to a follow by ' +
    'call id after the restart', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const state = mkdtempSync(join(tmpdir(), 'berth-state-'));
    cleanup.push(() => rmSync(state, { recursive: true, force: true }));
    const cases = [
      { runId: 'ok', body: "return {'answer': 42}", want: { $case: 'result', value: { value: { answer: 42 } } } },
      { runId: 'bad', body: "raise ValueError('no good')", want: { $case: 'failure', value: { type: 'ValueError' } } },
    ];
    let s = await serve(address, state);
    for (const c of cases) {
      const source = `def process():\n    ${c.body}\n`;
      const got = await runThenCrash(s.client, s.child, runRequest({ runId: c.runId, source }));
      expect(got.kind).toMatchObject(c.want);
      s = await serve(address, state);
      const follow = { ...runRequest({}), follow: { callId: `${c.runId}:flow.node`, afterSeq: 0 } };
      const again = await run(s.client, follow).done;
      expect(again.error).toBeNull();
      expect(kinds(again)).toEqual(['started', c.want.$case]);
      expect(terminal(again)).toMatchObject(c.want);
    }
  }, 90_000);
});
