/**
 * The lines of a call that ended while its caller was away survive a server SIGKILL (issue 19 and 20 targets, SPEC
 * S3): a Run with `disconnect_grace_ms` whose stream broke after its first line keeps running; it ends on the
 * server with no one following; the server is SIGKILLed and started again on its state dir (as a standby taking
 * over restores from etcd); the caller follows the call by id from the last sequence number it saw and gets every
 * line it had not seen exactly once, in order, then exit 0 — not the ending alone with the lines gone (the chaos
 * cluster test's "exit 0 but 2/14 lines seen"). A follow from before the events the record kept is refused
 * FAILED_PRECONDITION rather than answered with lines missing. Real `berth serve` processes on a real journal.
 */
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient, type RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { EVENTS_KEPT_BYTES } from '../../src/journal/ending.js';
import { claim, watch } from '../support/claims.js';
import { RestartableServer } from '../support/restartable-server.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function clientOf(address: string): PlacementServiceClient {
  const c = new PlacementServiceClient(address, credentials.createInsecure());
  open.push(() => c.close());
  return c;
}

const followOf = (callId: string, afterSeq: number): RunRequest => ({
  ...runRequest({}),
  follow: { callId, afterSeq },
});

/** The seq of every event in `o`, in order. */
const seqs = (o: { responses: { kind?: { $case: string; value: unknown } }[] }) =>
  o.responses.flatMap((r) => (r.kind?.$case === 'event' ? [(r.kind.value as { seq: number }).seq] : []));

/**
 * Runs `script` (lines on stdout) as call `<runId>:flow.node` with a caller grace, reads its first event, cancels
 * the stream (the caller is cut off) and resolves, with that event's seq, once the call has ended on the server
 * and its ending is durable (a Claim is granted only once what was journaled before it is).
 */
async function endWhileAway(c: PlacementServiceClient, runId: string, script: string): Promise<number> {
  const w = watch(c);
  open.push(() => w.cancel());
  await w.ready;
  const callId = `${runId}:flow.node`;
  const finished = w.next((e) => e.kind === 'call_finished' && e.callId === callId);
  const r = run(c, { ...runRequest({ runId, argv: ['sh', '-c', script] }), disconnectGraceMs: 30_000 });
  const first = await new Promise<number>((resolve) => {
    const look = setInterval(() => {
      const s = seqs(r);
      if (s.length) {
        clearInterval(look);
        resolve(s[0]);
      }
    }, 5);
  });
  expect(outputLines(r)[0]?.line).toBe('1');
  r.cancel();
  await finished;
  const barrier = claim(c, { cpus: 1 });
  await barrier.granted;
  await barrier.release();
  return first;
}

describe('a call that ended while its caller was away is followed after a server SIGKILL', () => {
  it('the follow from the last seq seen gets every later line exactly once, in order, then exit 0; from before ' +
    'the lines kept it is FAILED_PRECONDITION', async () => {
    const server = new RestartableServer(['--cpus', '2', '--gpus', '']);
    open.push(() => server.close());
    const c1 = clientOf(await server.start());
    // Each line its own event: the first is read, the rest come while no one follows.
    const lines = 12;
    const small = `echo 1; sleep 0.3; for i in $(seq 2 ${lines}); do echo $i; sleep 0.05; done`;
    const seen = await endWhileAway(c1, 'away', small);
    // More output than the ended record keeps: only its newest events are kept.
    const big = `echo 1; sleep 0.3; head -c ${4 * EVENTS_KEPT_BYTES} /dev/zero | tr '\\0' 'x' | fold -w 100`;
    const bigSeen = await endWhileAway(c1, 'big', big);

    await server.kill(); // a crash: the call's events were only in its memory, and the agent side has forgotten them
    const c2 = clientOf(await server.start());
    const again = await run(c2, followOf('away:flow.node', seen)).done;
    expect(again.error).toBeNull();
    expect(outputLines(again).map((l) => l.line)).toEqual(Array.from({ length: lines - 1 }, (_, i) => String(i + 2)));
    const s = seqs(again);
    expect(s[0]).toBeGreaterThan(seen);
    expect(s).toEqual([...s].sort((a, b) => a - b));
    expect(new Set(s).size).toBe(s.length);
    expect(terminal(again)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    // Followed again from its newest seq: nothing more, the ending.
    const last = await run(c2, followOf('away:flow.node', s.at(-1)!)).done;
    expect(outputLines(last)).toEqual([]);
    expect(terminal(last)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });

    const lost = await run(c2, followOf('big:flow.node', bigSeen)).done;
    expect(lost.error?.code).toBe(status.FAILED_PRECONDITION);
    expect(lost.error?.details).toMatch(/events after seq \d+ are no longer kept/);
  }, 60_000);
});
