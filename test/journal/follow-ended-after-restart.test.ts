/**
 * Following a call that ended before a server restart (issue 19, SPEC S3): its `ended/<id>` journal record keeps
 * how it ended, so after a SIGKILL and a start on the same state dir a follow by call id answers Started and the
 * ending — its Result's value, its Failure, or "result not kept" for a value over RESULT_KEPT_BYTES — after its
 * newest events (kept too, follow-ended-lines-after-restart.test.ts), those after the follow's seq only; a call id
 * the journal never held is still NOT_FOUND. Real `berth serve` processes.
 */
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { RESULT_KEPT_BYTES } from '../../src/journal/ending.js';
import { claim } from '../support/claims.js';
import { RestartableServer } from '../support/restartable-server.js';
import { kinds, outputLines, run, runRequest, terminal } from '../support/run-client.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A client of the server at `address`, closed after the test. */
function clientOf(address: string): PlacementServiceClient {
  const c = new PlacementServiceClient(address, credentials.createInsecure());
  open.push(() => c.close());
  return c;
}

/** A follow of call `callId` from event `afterSeq`. */
const followOf = (callId: string, afterSeq: number): RunRequest => ({
  ...runRequest({}),
  follow: { callId, afterSeq },
});

describe('a call that ended before a server SIGKILL is followed by id after the restart', () => {
  it('the follow answers its result value, its failure, or "result not kept", after its line; an unknown id is ' +
    'NOT_FOUND', async () => {
    const server = new RestartableServer(['--cpus', '2', '--gpus', '']);
    open.push(() => server.close());
    const c1 = clientOf(await server.start());
    const source = (body: string) => `def process():\n    print('a line')\n    ${body}\n`;
    const ok = await run(c1, runRequest({ runId: 'ok', source: source("return {'answer': 42}") })).done;
    expect(ok.error).toBeNull();
    expect(kinds(ok)).toContain('event');
    const bad = await run(c1, runRequest({ runId: 'bad', source: source("raise ValueError('no good')") })).done;
    expect(terminal(bad)).toMatchObject({ $case: 'failure', value: { type: 'ValueError' } });
    const big = await run(c1, runRequest({ runId: 'big', source: source(`return 'x' * ${RESULT_KEPT_BYTES}`) })).done;
    expect(terminal(big)?.$case).toBe('result');
    // A Claim is granted only once everything journaled before it is durable (SPEC S4): the endings are too.
    const held = claim(c1, { cpus: 1 });
    await held.granted;
    await held.release();

    await server.kill(); // a crash: nothing drained
    const c2 = clientOf(await server.start());
    const again = await run(c2, followOf('ok:flow.node', 0)).done;
    expect(again.error).toBeNull();
    expect(kinds(again)).toEqual(['started', 'event', 'result']); // its line is kept across the restart
    expect(outputLines(again).map((l) => l.line)).toEqual(['a line']);
    expect(terminal(again)).toMatchObject({
      $case: 'result',
      value: { callId: 'ok:flow.node', value: { answer: 42 } },
    });
    const failed = await run(c2, followOf('bad:flow.node', 3)).done;
    expect(failed.error).toBeNull();
    expect(kinds(failed)).toEqual(['started', 'failure']);
    expect(terminal(failed)).toMatchObject({ $case: 'failure', value: { type: 'ValueError', message: 'no good' } });
    const large = await run(c2, followOf('big:flow.node', 0)).done;
    expect(large.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(large.error?.details).toMatch(/result not kept/);
    const unknown = await run(c2, followOf('never:flow.node', 0)).done;
    expect(unknown.error?.code).toBe(status.NOT_FOUND);
  }, 60_000);
});
