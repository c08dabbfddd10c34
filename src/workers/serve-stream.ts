/**
 * serveWorkerStream: the life of one WorkerStream on the server. First frame Hello (validated),
 * Welcome back, then frames routed until the stream ends, errors, or stays silent past the
 * keepalive; on drain the worker is sent Drain and the stream ends once its calls are done.
 * A stream replaced by a newer one under the same name (SPEC W1) ends FAILED_PRECONDITION (its
 * calls fail UNAVAILABLE "went away"); a silent one ends UNAVAILABLE. A cut or silent stream leaves its worker
 * held (SPEC S2, hub.lost), and so does a stream ended without a Stopping frame; a Stopping frame, a bad frame or
 * a drain lets it go at once.
 */
import type { WorkerStreamRequest } from '../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../errors.js';
import { checkWorkerName, type WorkerCredential } from './credential.js';
import { machineFromHello } from './hello.js';
import { AttachedWorker, type FrameSink } from './attached.js';
import type { WorkerHub } from './hub.js';
import { nextOrAbort } from './next-or-abort.js';

/** Why a worker left when its stream was torn down (agent stopped or killed, connection lost). */
export const STREAM_CUT = 'its stream was cut (the agent stopped or the connection was lost)';

/**
 * Serves one worker stream until it is over. `keeper`: the stream presented the engine keeper's secret (issue 19
 * item 5): it attaches under the engine's name, which any other stream is refused.
 * @throws BerthError invalid_argument for a first frame that is not a valid Hello (or names the
 *   engine), or a bad later frame; failed_precondition when replaced by a newer stream of the same
 *   name; unavailable while draining or silent past the keepalive; permission_denied when the
 *   Hello names a worker `credential` does not bind or another identity holds live (SPEC R7).
 */
export async function serveWorkerStream(
  hub: WorkerHub,
  messages: AsyncIterable<WorkerStreamRequest>,
  write: FrameSink,
  signal: AbortSignal,
  drain: { signal: AbortSignal; graceMs: number },
  credential?: WorkerCredential,
  keeper = false,
): Promise<void> {
  const it = messages[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  if (first.value.frame?.$case !== 'hello')
    throw new BerthError(
      'invalid_argument',
      `frame: the first frame must be hello (got ${first.value.frame?.$case ?? 'nothing'})`,
    );
  const spec = machineFromHello(first.value.frame.value);
  if (drain.signal.aborted)
    throw new BerthError('unavailable', 'server is draining: attach to it again once it is back');
  if ((spec.name === hub.o.engineName) !== keeper)
    throw new BerthError(
      'invalid_argument',
      keeper
        ? `hello.name: the engine keeper attaches as '${hub.o.engineName}' (got '${spec.name}')`
        : `hello.name: '${spec.name}' is the engine's name`,
    );
  if (credential) checkWorkerName(spec.name, credential);
  const hello = first.value.frame.value;
  const w = new AttachedWorker(spec, write, credential && { key: credential.key, describe: credential.describe }, {
    agentId: hello.agentId,
    instanceId: hello.instanceId,
    heldCalls: hello.heldCalls,
  });
  w.keeper = keeper;
  hub.attach(w);
  await w.send({
    $case: 'welcome',
    value: { serverVersion: hub.o.serverVersion, heartbeatMs: hub.o.heartbeatMs, calls: w.welcomeCalls },
  });
  let held = false; // reading paused for a slow caller: the worker is not silent, berth is not listening
  const silence = setInterval(
    () => {
      if (held) w.lastSeen = Date.now();
      else if (Date.now() - w.lastSeen > hub.keepaliveMs) hub.lost(w, `silent for more than ${hub.keepaliveMs} ms`);
    },
    Math.min(1000, hub.o.heartbeatMs),
  );
  const onDrain = () => void w.send({ $case: 'drain', value: { graceMs: drain.graceMs } });
  if (drain.signal.aborted) onDrain();
  else drain.signal.addEventListener('abort', onDrain, { once: true });
  let why = 'stream ended';
  let cut = false; // the link broke (no Stopping, no drain, no refusal of ours): the worker is held (SPEC S2)
  let stopping = false;
  try {
    // SPEC R3: a draining worker stays while it runs calls or holds claims (they get the grace too).
    const busy = () => w.calls.size > 0 || (hub.o.placer.machines.get(spec.name)?.books.claims ?? 0) > 0;
    const over = streamOver(w, drain.signal, busy);
    for (;;) {
      const next = await nextOrAbort(it, over);
      if (next.done) break;
      const frame = next.value.frame;
      w.receive(frame);
      if (frame?.$case === 'stopping') {
        // SPEC S2: the agent stops for good, its calls with it: they fail at once, the books leave.
        stopping = true;
        hub.leave(w, `the agent is stopping (${frame.value.reason.slice(0, 200) || 'no reason given'})`);
        break;
      }
      // Backpressure end to end (issue 11): while this call's callers lag, read no more frames, so
      // HTTP/2 flow control pauses the agent's writer and the agent stops reading the process's output.
      const rec = frame?.$case === 'event' ? w.calls.get(frame.value.callId) : undefined;
      if (rec?.full()) {
        held = true;
        await roomOr(rec.room(), over);
        held = false;
        w.lastSeen = Date.now();
      }
    }
    if (stopping) return;
    // replaced: FAILED_PRECONDITION; silent: UNAVAILABLE
    if (w.gone.signal.aborted) throw w.streamEnd ?? w.gone.signal.reason;
    // gRPC reports a torn-down stream (agent killed, network cut) as 'cancelled': nobody cancelled anything.
    // An end without a Stopping is a lost link too (the cancel may be seen just after the end): held (SPEC S2).
    cut = !drain.signal.aborted;
    if (signal.aborted)
      why =
        signal.reason instanceof BerthError && signal.reason.kind === 'cancelled'
          ? STREAM_CUT
          : ((signal.reason as Error)?.message ?? STREAM_CUT);
    else why = drain.signal.aborted ? 'server drained' : STREAM_CUT;
  } catch (err) {
    why = err instanceof Error ? err.message : String(err);
    cut = !(err instanceof BerthError); // a transport error, not a refusal of ours: the link broke
    throw err;
  } finally {
    clearInterval(silence);
    drain.signal.removeEventListener('abort', onDrain);
    if (cut) hub.lost(w, why);
    else hub.leave(w, why);
  }
}

/** Resolves when `room` does or `signal` aborts. */
function roomOr(room: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void room.then(done);
  });
}

/** Aborted when `w` leaves, or once the server drains and `w` is no longer `busy` (calls or claims). */
function streamOver(w: AttachedWorker, drain: AbortSignal, busy: () => boolean): AbortSignal {
  const over = new AbortController();
  const done = () => over.abort();
  if (w.gone.signal.aborted) done();
  w.gone.signal.addEventListener('abort', done, { once: true });
  const watch = () => {
    const t = setInterval(() => {
      if (!busy() || w.gone.signal.aborted) {
        clearInterval(t);
        done();
      }
    }, 50);
  };
  if (drain.aborted) watch();
  else drain.addEventListener('abort', watch, { once: true, signal: over.signal });
  return over.signal;
}
