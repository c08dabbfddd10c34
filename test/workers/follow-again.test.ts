/**
 * A Run can be followed again by call id (SPEC S3, issue 19 item 3): a caller whose Run stream broke sends
 * RunRequest.follow with the last event sequence number it saw and gets the rest exactly once, then the ending —
 * when its Run asked `disconnect_grace_ms`, the call outlived the broken stream meanwhile. Engine-host calls, real
 * server over real gRPC.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunRequest, RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

async function setup(): Promise<{ t: TestServer; dir: string }> {
  const t = await startServer({ cpus: 2 });
  open.push(() => t.close());
  const dir = mkdtempSync(join(tmpdir(), 'berth-follow-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  return { t, dir };
}

/** Prints 1..3, waits for the file `go`, prints 4..6 and exits 0. */
function gated(dir: string, graceMs: number): RunRequest {
  const go = join(dir, 'go');
  const script = `for i in 1 2 3; do echo $i; done; while [ ! -f '${go}' ]; do sleep 0.02; done; for i in 4 5 6; do echo $i; done`;
  return { ...runRequest({ runId: 'f1', argv: ['sh', '-c', script] }), disconnectGraceMs: graceMs };
}

/** Sequence number of the last event among `responses` (0 when none). */
function lastSeq(responses: RunResponse[]): number {
  const seqs = responses.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));
  return seqs.length ? seqs[seqs.length - 1] : 0;
}

const followOf = (callId: string, afterSeq: number): RunRequest => ({
  ...runRequest({}),
  follow: { callId, afterSeq },
});

describe('following a call again (SPEC S3)', () => {
  it(
    'a caller whose stream broke follows the call from its last seq: every line exactly once, in order, ' +
      'events numbered without a gap, then the result',
    async () => {
      const { t, dir } = await setup();
      const a = run(t.placement, gated(dir, 10_000));
      await until(() => outputLines(a).length >= 3);
      const seen = lastSeq(a.responses);
      expect(seen).toBeGreaterThan(0);
      a.cancel();
      expect((await a.done).error?.code).toBe(status.CANCELLED);
      writeFileSync(join(dir, 'go'), ''); // lines 4..6 come while nobody follows
      const b = await run(t.placement, followOf('f1:flow.node', seen)).done;
      expect(b.error).toBeNull();
      expect(b.responses[0].kind?.$case).toBe('started');
      const lines = [...outputLines(a), ...outputLines(b)].map((l) => l.line);
      expect(lines).toEqual(['1', '2', '3', '4', '5', '6']);
      const seqs = [...a.responses, ...b.responses].flatMap((r) =>
        r.kind?.$case === 'event' ? [r.kind.value.seq] : [],
      );
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      expect(terminal(b)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    },
  );

  it('a call that ended while its caller was away is still followed: all of its events again, then its result', async () => {
    const { t, dir } = await setup();
    writeFileSync(join(dir, 'go'), '');
    const whole = await run(t.placement, gated(dir, 10_000)).done;
    expect(whole.error).toBeNull();
    const b = await run(t.placement, followOf('f1:flow.node', 0)).done;
    expect(b.error).toBeNull();
    expect(outputLines(b)).toEqual(outputLines(whole));
    expect(terminal(b)).toEqual(terminal(whole));
  });

  it('without disconnect_grace_ms a broken stream stops the call as before: following it again ends CANCELLED', async () => {
    const { t, dir } = await setup();
    const a = run(t.placement, gated(dir, 0));
    await until(() => outputLines(a).length >= 3);
    a.cancel();
    await a.done;
    const b = await run(t.placement, followOf('f1:flow.node', lastSeq(a.responses))).done;
    expect(b.error?.code).toBe(status.CANCELLED);
    expect(existsSync(join(dir, 'go'))).toBe(false);
  });

  it('a caller that does not come back within the grace: the call is stopped and its claim given back', async () => {
    const { t, dir } = await setup();
    const a = run(t.placement, gated(dir, 300));
    await until(() => outputLines(a).length >= 3);
    a.cancel();
    await a.done;
    await until(() => t.server.context.placer.snapshot().held.length === 0);
    const b = await run(t.placement, followOf('f1:flow.node', 0)).done;
    expect(b.error?.code).toBe(status.CANCELLED);
    expect(b.error?.details).toContain('did not come back within 300 ms');
  });

  it('following an unknown call is NOT_FOUND naming follow.call_id; a malformed one is INVALID_ARGUMENT', async () => {
    const { t } = await setup();
    const missing = await run(t.placement, followOf('nope:flow.node', 0)).done;
    expect(missing.error?.code).toBe(status.NOT_FOUND);
    expect(missing.error?.details).toContain('follow.call_id');
    const bad = await run(t.placement, followOf('no colon here', 0)).done;
    expect(bad.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.error?.details).toContain('follow.call_id');
    const big = await run(t.placement, { ...runRequest({}), disconnectGraceMs: 3_600_001 }).done;
    expect(big.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(big.error?.details).toContain('disconnect_grace_ms');
  });
});
