/**
 * RunWhole (issue 24 item 9): Run answered in one message, through the same rules and call record as Run — the
 * same messages in order, the node's failure, bad input refused before anything is claimed, a cancelled caller's
 * call stopped and its claim given back, and a call followed again by id (SPEC S3).
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type {
  PlacementServiceClient,
  RunResponse,
  RunWholeRequest,
  RunWholeResponse,
} from '../../generated/ts/berth/v1/placement.js';
import { kinds, run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { freeOf, snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});
async function server(): Promise<TestServer> {
  const s = await startServer({ cpus: 2 });
  open.push(() => s.close());
  return s;
}

/** Calls RunWhole; resolves with the answer's messages or the error. */
function runWhole(
  client: PlacementServiceClient,
  req: RunWholeRequest,
): { done: Promise<{ responses: RunResponse[]; error: ServiceError | null }>; cancel(): void } {
  let call: { cancel(): void } | undefined;
  const done = new Promise<{ responses: RunResponse[]; error: ServiceError | null }>((resolve) => {
    call = client.runWhole(req, (err: ServiceError | null, res?: RunWholeResponse) =>
      resolve({ responses: res?.messages ?? [], error: err }),
    );
  });
  return { done, cancel: () => call!.cancel() };
}

describe('RunWhole: a Run answered in one message', () => {
  it('answers Started, the lines the node printed and its Result, as the Run stream carries them', async () => {
    const s = await server();
    const req = runRequest({
      runId: 'w1',
      source: 'def process(x):\n    print("hi")\n    return x + 1\n',
      kwargs: { x: 41 },
    });
    const whole = await runWhole(s.placement, { run: req }).done;
    expect(whole.error).toBeNull();
    expect(kinds(whole)).toEqual(['started', 'event', 'result']);
    expect(whole.responses[0].kind).toMatchObject({ $case: 'started', value: { callId: 'w1:flow.node' } });
    expect(terminal(whole)?.value).toMatchObject({ value: 42 });
    const streamed = await run(s.placement, { ...req, runId: 'w2' }).done;
    expect(kinds(streamed)).toEqual(kinds(whole));
    expect(await freeOf(s.placement, 'engine')).toEqual({ cpus: 2, gpus: 0 });
  });

  it("answers the node's own exception as the Failure, and gives the claim back", async () => {
    const s = await server();
    const whole = await runWhole(s.placement, {
      run: runRequest({ source: 'def process():\n    raise ValueError("no such row")\n' }),
    }).done;
    expect(whole.error).toBeNull();
    expect(kinds(whole)).toEqual(['started', 'failure']);
    expect(terminal(whole)?.value).toMatchObject({ type: 'ValueError', message: 'no such row' });
    await until(async () => (await freeOf(s.placement, 'engine')).cpus === 2);
  });

  it('refuses a request without its RunRequest, or with a bad run id, naming the field, claiming nothing', async () => {
    const s = await server();
    const none = await runWhole(s.placement, { run: undefined }).done;
    expect(none.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(none.error?.details).toMatch(/^run: required/);
    const bad = await runWhole(s.placement, { run: runRequest({ runId: 'no spaces' }) }).done;
    expect(bad.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.error?.details).toMatch(/^run_id: /);
    const snap = await snapshot(s.placement);
    expect(snap.held).toEqual([]);
    expect(snap.waiting).toEqual([]);
  });

  it('a caller that cancels its RunWhole stops the call and its claim is given back', async () => {
    const s = await server();
    const w = runWhole(s.placement, { run: runRequest({ runId: 'c1', argv: ['sleep', '60'] }) });
    await until(async () => (await snapshot(s.placement)).calls.length === 1);
    w.cancel();
    expect((await w.done).error?.code).toBe(status.CANCELLED);
    await until(async () => (await snapshot(s.placement)).calls.length === 0);
    await until(async () => (await freeOf(s.placement, 'engine')).cpus === 2);
  });

  it('a call that ended is followed again by id through RunWhole: all of it, once more (SPEC S3)', async () => {
    const s = await server();
    const first = await runWhole(s.placement, {
      run: runRequest({ runId: 'f1', argv: ['sh', '-c', 'echo one; echo two'] }),
    }).done;
    expect(first.error).toBeNull();
    const again = await runWhole(s.placement, {
      run: { ...runRequest({}), follow: { callId: 'f1:flow.node', afterSeq: 0 } },
    }).done;
    expect(again.error).toBeNull();
    expect(kinds(again)).toEqual(kinds(first));
    expect(terminal(again)).toEqual(terminal(first));
  });
});
