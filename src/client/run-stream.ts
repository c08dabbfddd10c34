/**
 * The items of one Run (SPEC W2): Started, then metrics and log lines in order, link changes of the
 * call's worker (SPEC S2), then one Result; a node's Failure is thrown as a RemoteError keeping its class
 * name and traceback.
 *
 * A Run stream that breaks before its ending (Unavailable: a server restart, a cut link; not the worker
 * gone, not a drain) is followed again (SPEC S3), as the Python client does: by call id from the last
 * event sequence number seen (RunRequest.follow) once the call started, else with the request as first
 * sent (one call id is one execution), with backoff, for up to RESUME_WINDOW_MS after the first break.
 * The caller sees every event once, then the ending. The call itself outlives the break where the server
 * keeps it: after a server restart, and while the server runs for a Run that asked `disconnectGraceMs`.
 */
import { type CallStarted, RunRequest } from '../../generated/ts/berth/v1/placement.js';
import type { Connection } from './connection.js';
import { BerthError, NotFound, RemoteError, Unavailable } from './errors.js';
import { remoteError, type WarningHandler, warnClamped } from './outcomes.js';
import { backoffMs, pause, RESUME_WINDOW_MS, RUN_BACKOFF, runWorthFollowing } from './resume.js';
import type { RunItem, RunSpec } from './runs.js';
import { serverStream } from './streams.js';

/** The request that follows the call of `first` again from after event `afterSeq` (SPEC S3). */
function followRequest(first: RunRequest, callId: string, afterSeq: number): RunRequest {
  const { flow, node, runId } = first;
  return RunRequest.fromPartial({ flow, node, runId, follow: { callId, afterSeq } });
}

/**
 * The items of the Run of `spec` (see RunItem), across broken streams (see the module); a Failure is
 * thrown as a RemoteError (NodeExited for sys.exit). A Started that says clamped warns `Clamped` via `warn`.
 * @throws the mapped BerthError (NodeTimeout, WorkerGone, NoWorker, Cancelled, ...); Unavailable when the
 *   stream stayed broken past the window or the call was lost meanwhile; `signal.reason` on abort.
 */
export async function* runItems(
  conn: Connection,
  spec: RunSpec,
  warn: WarningHandler,
  signal?: AbortSignal,
): AsyncGenerator<RunItem, void, undefined> {
  const { flow, node, runId } = spec.request;
  const callId = `${runId}:${flow}.${node}`;
  let started: CallStarted | undefined;
  let lastSeq = 0;
  let following = callId; // the current attempt's call id (a retry runs as `<call id>#<k>`, SPEC S8)
  let firstBreak: number | undefined;
  for (let attempt = 0; ; attempt++) {
    const request = started ? followRequest(spec.request, following, lastSeq) : spec.request;
    try {
      for await (const msg of serverStream(conn, (s, md) => s.run(request, md), { signal, ctx: spec.ctx })) {
        const k = msg.kind;
        if (k?.$case === 'started') {
          if (started) continue; // a followed call says Started again: handed on once
          started = k.value;
          warnClamped(`call ${k.value.callId}`, k.value, warn);
          yield k;
        } else if (k?.$case === 'event') {
          const { seq } = k.value;
          if (seq && seq <= lastSeq) continue; // exactly once (SPEC S1)
          lastSeq = Math.max(lastSeq, seq);
          const e = k.value.kind;
          const id = k.value.callId;
          if (e?.$case === 'metric' || e?.$case === 'log') yield { ...e, callId: id, seq };
          else if (e?.$case === 'logs')
            for (const line of e.value.lines)
              yield { $case: 'log', value: { stream: e.value.stream, line }, callId: id, seq };
        } else if (k?.$case === 'retrying') {
          following = k.value.callId; // the next attempt: its own Started, its events numbered from 1
          started = undefined;
          lastSeq = 0;
          yield k;
        } else if (k?.$case === 'link' || k?.$case === 'preempting') yield k;
        else if (k?.$case === 'result') return void (yield k);
        else if (k?.$case === 'failure') throw remoteError(k.value);
      }
      throw new BerthError(`Run stream for ${flow}.${node} ended without a result (last event ${lastSeq})`);
    } catch (e) {
      if (signal?.aborted || e instanceof RemoteError || !runWorthFollowing(e)) {
        if (e instanceof NotFound && firstBreak !== undefined)
          throw new Unavailable(`call ${callId} was lost while its stream was broken: ${e.message}`);
        throw e;
      }
      firstBreak ??= performance.now();
      if (performance.now() - firstBreak >= RESUME_WINDOW_MS) throw e;
      await pause(backoffMs(attempt, RUN_BACKOFF), signal);
    }
  }
}
