/**
 * Retries (SPEC S8, issue 19 item 9), through the real server and real `berth worker` agents: a Run that asked
 * `max_retries` whose worker is SIGKILLed mid-call is placed again on another worker and succeeds, its caller
 * told why (Retrying); a node's own failure is retried only with `retry_on_failure`; bad retry fields are named.
 */
import { status } from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryResponse } from '../../generated/ts/berth/v1/history.js';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { BerthClient, InvalidAsk } from '../../src/client/index.js';
import { startBerthWorker } from '../support/berth-worker.js';
import { kinds, outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'berth-retries-'));
  open.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** A command that, the first time, prints its pid and sleeps; the second time (marker there) prints "second". */
function firstSleepsThenSucceeds(marker: string): string[] {
  return ['sh', '-c', `if [ -e ${marker} ]; then echo second; exit 0; fi; touch ${marker}; echo $$; exec sleep 30`];
}

function history(client: PlacementServiceClient, runId: string): Promise<HistoryResponse> {
  const req = { runId, state: '', machine: '', kind: '', sinceMs: 0, untilMs: 0, limit: 0 };
  return new Promise((resolve, reject) => client.history(req, (err, res) => (err ? reject(err) : resolve(res!))));
}

describe('retries when the machine is lost', () => {
  it('a Run with max_retries 1 whose worker is SIGKILLed mid-call runs again on another worker and succeeds', async () => {
    const s = await startServer({ cpus: 1, flags: { workerHold: 0.3 } });
    open.push(() => s.close());
    const w1 = await startBerthWorker(s.address, 'w1', ['--labels', 'w', '--cpus', '1', '--gpus', '']);
    open.push(() => w1.stop());
    const marker = join(tempDir(), 'ran-once');
    const h = run(
      s.placement,
      runRequest({ runId: 'rt1', label: 'w', argv: firstSleepsThenSucceeds(marker), maxRetries: 1 }),
    );
    open.push(() => h.cancel());
    await until(() => outputLines(h).length > 0);
    const pid = Number(outputLines(h)[0].line);
    open.push(() => {
      try {
        process.kill(-pid, 'SIGKILL'); // the orphaned sleep of the killed agent (its own process group)
      } catch {
        // gone already
      }
    });
    const w2 = await startBerthWorker(s.address, 'w2', ['--labels', 'w', '--cpus', '1', '--gpus', '']);
    open.push(() => w2.stop());
    w1.child.kill('SIGKILL');
    const o = await h.done;
    expect(o.error).toBeNull();
    // the link went down (WorkerLink, SPEC S2), its hold ran out, and the call was placed again
    expect(kinds(o).filter((k) => k !== 'event')).toEqual(['started', 'link', 'retrying', 'started', 'result']);
    const retrying = o.responses.find((r) => r.kind?.$case === 'retrying')?.kind;
    expect(retrying?.$case === 'retrying' && retrying.value).toMatchObject({
      attempt: 2,
      machine: 'w1',
      callId: 'rt1:flow.node#2',
      previousCallId: 'rt1:flow.node',
    });
    expect(retrying?.$case === 'retrying' && retrying.value.reason).toMatch(/worker w1 went away/);
    const starts = o.responses.flatMap((r) => (r.kind?.$case === 'started' ? [r.kind.value] : []));
    expect(starts.map((x) => [x.callId, x.machine])).toEqual([
      ['rt1:flow.node', 'w1'],
      ['rt1:flow.node#2', 'w2'],
    ]);
    expect(outputLines(o).at(-1)?.line).toBe('second');
    // each attempt is followed again by its own call id (SPEC S3): the second's events and result
    const again = await run(s.placement, {
      ...runRequest({}),
      follow: { callId: 'rt1:flow.node#2', afterSeq: 0 },
    }).done;
    expect(again.error).toBeNull();
    expect(outputLines(again).map((l) => l.line)).toEqual(['second']);
    expect(terminal(again)?.$case).toBe('result');
    // both attempts are in the history: the first lost with w1, the second succeeded on w2
    const hist = await history(s.placement, 'rt1');
    expect(hist.entries.map((e) => [e.id, e.state, e.machine, e.attempt])).toEqual([
      ['rt1:flow.node#2', 'succeeded', 'w2', 2],
      ['rt1:flow.node', 'lost', 'w1', 1],
    ]);
  }, 30_000);

  it("a node's own failure is not retried without retry_on_failure, and is with it", async () => {
    const s = await startServer({ cpus: 2 });
    open.push(() => s.close());
    const plain = await run(s.placement, runRequest({ runId: 'rt2', argv: ['sh', '-c', 'exit 3'], maxRetries: 2 }))
      .done;
    expect(plain.error).toBeNull();
    expect(kinds(plain)).not.toContain('retrying');
    const t = terminal(plain);
    expect(t?.$case === 'failure' && t.value.type).toBe('ExitCode');

    const marker = join(tempDir(), 'failed-once');
    const argv = ['sh', '-c', `if [ -e ${marker} ]; then echo fine; exit 0; fi; touch ${marker}; exit 3`];
    const again = await run(s.placement, runRequest({ runId: 'rt3', argv, maxRetries: 1, retryOnFailure: true })).done;
    expect(again.error).toBeNull();
    expect(kinds(again).filter((k) => k !== 'event')).toEqual(['started', 'retrying', 'started', 'result']);
    const r = again.responses.find((x) => x.kind?.$case === 'retrying')?.kind;
    expect(r?.$case === 'retrying' && r.value.reason).toMatch(/^ExitCode: /);
    // the held-back failure of attempt 1 never reached the caller
    expect(kinds(again)).not.toContain('failure');
  }, 20_000);

  it('bad retry fields are INVALID_ARGUMENT naming max_retries or retry_on_failure; a claim_id Run is not retried', async () => {
    const s = await startServer({ cpus: 2 });
    open.push(() => s.close());
    const tooMany = await run(s.placement, runRequest({ runId: 'rt4', maxRetries: 11 })).done;
    expect(tooMany.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(tooMany.error?.details).toContain('max_retries: at most 10 (got 11)');
    const inClaim = await run(s.placement, runRequest({ runId: 'rt5', claimId: 'c-1', maxRetries: 1 })).done;
    expect(inClaim.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(inClaim.error?.details).toContain('a Run inside a claim (claim_id) is not retried');
    const alone = await run(s.placement, runRequest({ runId: 'rt6', retryOnFailure: true })).done;
    expect(alone.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(alone.error?.details).toContain('retry_on_failure: needs max_retries');
  });

  it('the TS client takes maxRetries and retryOnFailure and hands the Retrying to onEvent', async () => {
    const s = await startServer({ cpus: 2 });
    open.push(() => s.close());
    const client = new BerthClient({ address: s.address });
    open.push(() => client.close());
    const marker = join(tempDir(), 'failed-once');
    const seen: string[] = [];
    const value = await client.run(
      {
        command: ['sh', '-c', `if [ -e ${marker} ]; then exit 0; fi; touch ${marker}; exit 5`],
        maxRetries: 1,
        retryOnFailure: true,
      },
      { onEvent: (item) => seen.push(item.$case === 'retrying' ? `retrying ${item.value.attempt}` : item.$case) },
    );
    expect(value).toEqual({ exit_code: 0 });
    expect(seen).toEqual(['started', 'retrying 2', 'started']);
    await expect(client.run({ command: ['true'], claim: 'c-1', maxRetries: 1 })).rejects.toThrow(InvalidAsk);
  });
});
