/**
 * Run RPC: one call of a node (SPEC "The contract", W2–W4). Inside a held claim (`claim_id`: its
 * machine and allocation) or as place → run → release (an ask). Streams Started, the call's
 * events in order, then exactly one Result or Failure; a second in-flight Run with the same call
 * id `<run_id>:<flow>.<node>` joins the first. Errors: INVALID_ARGUMENT, FAILED_PRECONDITION
 * (label), NOT_FOUND (claim_id), UNAVAILABLE ("went away"), DEADLINE_EXCEEDED (timeout_ms, the
 * worker is sent a Cancel), CANCELLED.
 */
import { z } from 'zod';
import type { RunRequest, RunResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { Grant } from '../../placement/types.js';
import type { CallRecord } from '../../workers/call-record.js';
import { toTask } from '../../workers/task.js';
import type { ServerContext } from '../context.js';
import { serverStream, type Sink } from '../edge.js';

const part = (what: string) => z.string().min(1, 'required').max(128, 'at most 128 characters').regex(/^[A-Za-z0-9_.\-]+$/, `${what} holds only letters, digits and _ . -`);
const idSchema = z.object({ runId: part('a run id'), flow: part('a flow name'), node: part('a node name') });
const SNAKE: Record<string, string> = { runId: 'run_id' };

/** Builds the Run handler. */
export function runHandler(ctx: ServerContext) {
  return serverStream<RunRequest, RunResponse>(ctx, 'Run', run, { followDrain: false });

  async function run(req: RunRequest, sink: Sink<RunResponse>, signal: AbortSignal): Promise<void> {
    const ids = idSchema.safeParse(req);
    if (!ids.success) {
      const key = String(ids.error.issues[0].path[0]);
      throw new BerthError('invalid_argument', `${SNAKE[key] ?? key}: ${ids.error.issues[0].message} (got ${JSON.stringify((req as unknown as Record<string, unknown>)[key])})`);
    }
    const { runId, flow, node } = ids.data;
    const callId = `${runId}:${flow}.${node}`;
    const joined = ctx.hub.calls.get(callId);
    if (joined && !joined.ended) return follow(joined, sink, signal);
    toTask(callId, undefined, req.payload); // validate the payload before anything is claimed
    if (joined) await settledOr(joined, signal); // a cancelled namesake is still stopping: let it finish first
    let grant: Grant;
    let own = false;
    if (req.placement?.$case === 'claimId') {
      const g = ctx.placer.get(req.placement.value);
      if (!g) throw new BerthError('not_found', `claim_id: no held claim ${JSON.stringify(req.placement.value)}`);
      grant = g;
    } else {
      if (!req.placement) throw new BerthError('invalid_argument', 'placement: a claim_id or an ask is required');
      const ask = normalizeAsk(req.placement.value, 'ask');
      grant = await ctx.placer.claim({ ...ask, node: ask.node || `${flow}.${node}`, runId: ask.runId || runId }, { signal });
      own = true;
    }
    let rec: CallRecord | undefined;
    try {
      const again = ctx.hub.calls.get(callId); // one started while this Run waited for its claim
      if (again && !again.ended) return await follow(again, sink, signal);
      const r: CallRecord = await ctx.hub.start({ callId, runId, flow, node, payload: req.payload }, grant, AbortSignal.any([signal, grant.lost]));
      rec = r;
      const onLost = () => r.fail(grant.lost.reason as BerthError);
      grant.lost.addEventListener('abort', onLost, { once: true });
      ctx.events.emit({ kind: 'call_started', callId, runId, machine: grant.machine, node: `${flow}.${node}`, claimId: grant.claimId, detail: `${callId} on ${grant.machine}` });
      const timer = req.timeoutMs > 0 ? setTimeout(() => {
        const why = new BerthError('deadline_exceeded', `call ${callId} exceeded its timeout of ${req.timeoutMs} ms`);
        r.stop(why);
        r.fail(why);
      }, req.timeoutMs) : undefined;
      try {
        await follow(r, sink, signal);
        ctx.events.emit({ kind: 'call_finished', callId, runId, machine: grant.machine, detail: `${callId} finished` });
      } catch (err) {
        ctx.events.emit({ kind: err instanceof BerthError && err.kind === 'cancelled' ? 'call_cancelled' : 'call_finished', callId, runId, machine: grant.machine, detail: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        clearTimeout(timer);
        grant.lost.removeEventListener('abort', onLost);
      }
    } finally {
      if (own) {
        const id = grant.claimId;
        // The claim is given back once the machine is really done (a cancelled process may take its grace).
        if (rec) void rec.settled.then(() => ctx.placer.release(id, 'run ended'));
        else ctx.placer.release(id, 'run ended');
      }
    }
  }
}

/** Resolves when `rec` is settled; rejects with `signal.reason` if the caller goes away first. */
function settledOr(rec: CallRecord, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void rec.settled.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/**
 * Streams `rec` to the caller: Started, events, then the terminal. If this caller goes away (or is
 * cut off as too slow) and no one else follows the call, the call is stopped.
 */
async function follow(rec: CallRecord, sink: Sink<RunResponse>, signal: AbortSignal): Promise<void> {
  await sink.write({ kind: { $case: 'started', value: { callId: rec.callId, machine: rec.machine, allocation: rec.allocation, clamped: false, asked: undefined } } });
  try {
    for await (const item of rec.follow(signal)) {
      await sink.write({ kind: item });
    }
  } catch (err) {
    // Nobody follows the call any more (caller gone, or cut off as too slow): stop it, so neither
    // the process nor its claim lingers.
    if (rec.followers === 0 && !rec.ended) {
      const why = signal.aborted ? new BerthError('cancelled', `call ${rec.callId} cancelled by its caller`) : err instanceof BerthError ? err : new BerthError('cancelled', `call ${rec.callId}: its caller stopped following`);
      rec.stop(why);
      rec.fail(why);
    }
    throw err;
  }
}
