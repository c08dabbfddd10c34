/**
 * Server-streaming calls of the client (Run, WatchEvents) as async generators: on the next address
 * while one answers UNAVAILABLE for want of a server before its first message (Connection.attempts),
 * cancelled when the caller's AbortSignal aborts or the caller stops iterating, ending with the mapped
 * BerthError (errors.ts) when the call fails.
 */
import type { ClientReadableStream, Metadata } from '@grpc/grpc-js';
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import type { Connection } from './connection.js';
import { type ErrorContext, fromServiceError, serverUnavailable } from './errors.js';

/** How a stream's caller stops it: `signal` aborting throws `signal.reason`, unless `quietAbort` ends it quietly. */
export interface StreamOptions {
  signal?: AbortSignal;
  quietAbort?: boolean;
  ctx?: ErrorContext;
}

/**
 * The messages of one server-streaming call opened by `open`, in order.
 * @throws the mapped BerthError; `signal.reason` once the signal aborts (unless `quietAbort`).
 */
export async function* serverStream<T>(
  conn: Connection,
  open: (stub: PlacementServiceClient, md: Metadata) => ClientReadableStream<T>,
  o: StreamOptions = {},
): AsyncGenerator<T, void, undefined> {
  const { signal } = o;
  let last: unknown;
  for (const { stub, settle, refused } of conn.attempts()) {
    if (signal?.aborted) {
      if (o.quietAbort) return;
      throw signal.reason;
    }
    const call = open(stub, conn.metadata);
    const onAbort = () => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let got = false;
    try {
      for await (const msg of call as AsyncIterable<T>) {
        if (!got) settle();
        got = true;
        yield msg;
      }
      return;
    } catch (e) {
      if (signal?.aborted) {
        if (o.quietAbort) return;
        throw signal.reason;
      }
      if (got || !serverUnavailable(e)) throw fromServiceError(e, o.ctx);
      refused(e);
      last = e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      call.cancel(); // a no-op once the call ended; stops it when the caller broke off
    }
  }
  throw conn.unreachable(last);
}
