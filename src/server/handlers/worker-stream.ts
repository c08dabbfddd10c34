/**
 * WorkerStream RPC: a worker attaches with Hello and runs the calls sent to it (SPEC W1–W4).
 * The stream does not end at drain: the worker is sent Drain and the stream ends once its calls
 * are done (or the server's grace cuts it). Errors: INVALID_ARGUMENT for a bad frame;
 * UNAUTHENTICATED without the token; PERMISSION_DENIED when the Hello names a worker its
 * credentials do not bind, or one a live stream of another identity holds (SPEC R7). Every frame carries the
 * leader's epoch; a clustered server that stopped acting sends none (SPEC S7).
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { WorkerStreamRequest, WorkerStreamResponse } from '../../../generated/ts/berth/v1/worker.js';
import { KEEPER_HEADER } from '../../workers/keeper-process.js';
import { serveWorkerStream } from '../../workers/serve-stream.js';
import type { ServerContext } from '../context.js';
import { callScope, checkToken, makeSink, readMessages } from '../edge.js';
import { toStatus } from '../status.js';
import { BerthError } from '../../errors.js';

/** Builds the WorkerStream handler. */
export function workerStreamHandler(ctx: ServerContext) {
  return (call: ServerDuplexStream<WorkerStreamRequest, WorkerStreamResponse>) => {
    void (async () => {
      let stopFollowing = () => {};
      try {
        // The engine keeper (issue 19 item 5) is admitted by its secret alone: the server started it.
        const keeper = ctx.hub.o.keeper?.admits(call.metadata.get(KEEPER_HEADER)[0]) ?? false;
        const credential = keeper
          ? undefined
          : ctx.identities
            ? ctx.identities.worker(call)
            : (checkToken(call.metadata, ctx.token), undefined);
        const scope = callScope(call, undefined); // the drain is served by serveWorkerStream
        const signal = scope.signal;
        const sink = makeSink(call);
        // This stream's own drain signal, fired from the registry: no listener per worker on a shared signal.
        const drain = new AbortController();
        stopFollowing = ctx.live.onDrain(() => drain.abort());
        await serveWorkerStream(
          ctx.hub,
          readMessages<WorkerStreamRequest>(call, scope),
          (f) =>
            ctx.acting && !ctx.acting()
              ? Promise.reject(new BerthError('unavailable', 'this server no longer leads its cluster'))
              : sink.write({ frame: f, epoch: ctx.epoch ?? 0 }),
          signal,
          {
            signal: drain.signal,
            // read when the drain starts: a Drain RPC may give its own grace
            get graceMs() {
              return ctx.drainGraceMs ?? ctx.options.grace * 1000;
            },
          },
          credential,
          keeper,
        );
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toStatus(err, ctx.log, 'WorkerStream'));
      } finally {
        stopFollowing();
      }
    })();
  };
}
