/**
 * Following a call for a Run's caller (SPEC W2, S3): Started (with the grant's clamped, asked and fell_back), the
 * call's events and link changes in order, then its ending; a caller that goes away stops the call unless its Run
 * asked a grace (`callerHold`), within which the call may be followed again. Shared by the Run handler's attempts
 * and its follows.
 */
import type { RunResponse } from '../../generated/ts/berth/v1/placement.js';
import type { Resources } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { Grant } from '../placement/types.js';
import { isTerminal, type CallRecord, type Terminal } from '../workers/call-record.js';
import { toResources } from './convert.js';
import type { Sink } from './edge.js';
import { isHalt } from './live-calls.js';

/** How long each call outlives its caller's broken stream, waiting to be followed again (its Run's grace), in ms. */
export const callerHold = new WeakMap<CallRecord, number>();
/** The grant each call runs in, so Started (also for a joined follower) says clamped + asked (issue 13). */
export const grantOf = new WeakMap<CallRecord, Grant>();

/**
 * Streams `rec` to the caller: Started, events, then the terminal, once it is journaled (`rec.endingKept`, SPEC S4);
 * resolves with the terminal. With `holdFailure`
 * a Failure is returned without being written (the Run retries it, SPEC S8). If this caller goes away (or is
 * cut off as too slow) and no one else follows the call, the call is stopped; the server's own halt (`isHalt`,
 * SPEC S5) is not the caller going away and leaves it running.
 */
export async function follow(
  rec: CallRecord,
  sink: Sink<RunResponse>,
  signal: AbortSignal,
  afterSeq = 0,
  holdFailure = false,
): Promise<Terminal | undefined> {
  await sink.write({
    kind: {
      $case: 'started',
      value: {
        callId: rec.callId,
        machine: rec.machine,
        allocation: rec.allocation,
        ...startedFacts(grantOf.get(rec)),
      },
    },
  });
  try {
    let end: Terminal | undefined;
    for await (const item of rec.follow(signal, afterSeq)) {
      if (isTerminal(item)) await rec.endingKept; // journaled before the caller is told (SPEC S4)
      if (holdFailure && item.$case === 'failure') return item; // to be retried: the caller sees Retrying instead
      await sink.write({ kind: item });
      if (isTerminal(item)) end = item;
    }
    return end;
  } catch (err) {
    if (err === rec.ending) await rec.endingKept; // the call's own error ending: journaled first too (SPEC S4)
    // The server stopping is not the caller leaving (SPEC S5): the call runs on, to be followed again after the
    // restart or takeover — neither stopped nor failed here, so no ending of it is journaled.
    if (signal.aborted && isHalt(signal.reason)) throw err;
    // Nobody follows the call any more (caller gone, or cut off as too slow): stop it, so neither
    // the process nor its claim lingers.
    const hold = callerHold.get(rec) ?? 0;
    if (rec.followers === 0 && !rec.ended && signal.aborted && hold > 0) {
      // The caller may follow it again (SPEC S3): stop it only if no one has when its grace runs out.
      const t = setTimeout(() => {
        if (rec.followers > 0 || rec.ended) return;
        const why = new BerthError('cancelled', `call ${rec.callId}: its caller did not come back within ${hold} ms`);
        rec.stop(why);
        rec.fail(why);
      }, hold);
      t.unref();
      void rec.settled.then(() => clearTimeout(t));
    } else if (rec.followers === 0 && !rec.ended) {
      const why = signal.aborted
        ? new BerthError('cancelled', `call ${rec.callId} cancelled by its caller`)
        : err instanceof BerthError
          ? err
          : new BerthError('cancelled', `call ${rec.callId}: its caller stopped following`);
      rec.stop(why);
      rec.fail(why);
    }
    throw err;
  }
}

/**
 * Started's facts of the grant, as Granted has them: clamped and the amount asked before clamping
 * (SPEC P11, issue 13), and fell_back when a preferred label was not used (SPEC P4, issue 23 item 7).
 */
function startedFacts(g: Grant | undefined): {
  clamped: boolean;
  asked: Resources | undefined;
  fellBack: boolean;
} {
  return g
    ? {
        clamped: g.clamped,
        asked: toResources(g.ask),
        fellBack: g.fellBack,
      }
    : { clamped: false, asked: undefined, fellBack: false };
}
