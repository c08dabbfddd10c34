/**
 * Opening one Claim stream up to its Granted: the first message (an ask, or a resume of a claim whose
 * stream broke, SPEC S3) on the connection's next address while one answers UNAVAILABLE before
 * anything else, each Queued handed to `onQueued`, and the stream kept open for the lease that follows.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { ClaimRequest, ClaimResponse, Granted, Queued } from '../../generated/ts/berth/v1/placement.js';
import type { Connection } from './connection.js';
import { BerthError, type ErrorContext, fromServiceError, NodeTimeout, serverUnavailable } from './errors.js';

/** A Claim stream of the client. */
export type ClaimCall = ClientDuplexStream<ClaimRequest, ClaimResponse>;

/** A granted Claim stream: its Granted, the call, and the reader of the messages after the grant. */
export interface OpenClaim {
  grant: Granted;
  call: ClaimCall;
  messages: AsyncIterator<ClaimResponse>;
}

/** How one opening waits: aborted by `signal`, bounded by `timeoutMs`, `onQueued` told of each Queued. */
export interface OpenOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  onQueued?: (reason: Queued) => void;
}

/**
 * Sends `first` on a new Claim stream and resolves once Granted; `what` names the claim in errors.
 * @throws NoWorker, Oversize, InvalidAsk, NotFound (a resume of a claim not held), Unavailable, ...; NodeTimeout
 *   after `timeoutMs`; BerthError when the stream ends before a grant; `signal.reason` on abort.
 */
export async function openClaim(
  conn: Connection,
  first: ClaimRequest,
  o: OpenOptions,
  ctx: ErrorContext,
  what: string,
): Promise<OpenClaim> {
  let last: unknown;
  for (const { stub, settle, refused } of conn.attempts()) {
    o.signal?.throwIfAborted();
    const call = stub.claim(conn.metadata);
    const messages = (call as AsyncIterable<ClaimResponse>)[Symbol.asyncIterator]();
    let timedOut = false;
    const onAbort = () => call.cancel();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const timer =
      o.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            call.cancel();
          }, o.timeoutMs);
    let got = false;
    try {
      call.write(first);
      for (;;) {
        const r = await messages.next();
        if (r.done) throw new BerthError(`${what}: the stream ended before a grant`);
        got = true;
        settle();
        const k = r.value.kind;
        if (k?.$case === 'queued') o.onQueued?.(k.value);
        else if (k?.$case === 'granted') return { grant: k.value, call, messages };
        else throw new BerthError(`${what}: unexpected ${k?.$case ?? 'empty message'} before the grant`);
      }
    } catch (e) {
      call.cancel(); // the server gives back whatever it held (SPEC P8)
      if (o.signal?.aborted) throw o.signal.reason;
      if (timedOut) throw new NodeTimeout(`${what} not granted within ${o.timeoutMs} ms`);
      if (got || !serverUnavailable(e)) throw fromServiceError(e, ctx);
      refused(e);
      last = e;
    } finally {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    }
  }
  throw conn.unreachable(last);
}
