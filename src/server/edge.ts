/**
 * The transport edge: turns grpc-js calls into what domain code sees — a request, an AbortSignal
 * and a Sink that honours write()/'drain' — checks the token (SPEC R2), and maps errors through
 * the one status mapper. Domain code never sees a grpc call.
 */
import type {
  Metadata,
  ServerDuplexStream,
  ServerUnaryCall,
  ServerWritableStream,
  sendUnaryData,
  handleBidiStreamingCall,
  handleServerStreamingCall,
  handleUnaryCall,
} from '@grpc/grpc-js';
import { timingSafeEqual } from 'node:crypto';
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { nextOrAbort } from '../workers/next-or-abort.js';
import { isUndecodable } from './decode.js';
import type { CallCredentials, Caller, Identities } from './identity.js';
import { toStatus } from './status.js';

/** What every handler factory receives from the server. */
export interface EdgeContext {
  log: Logger;
  /** Shared secret required as `authorization: Bearer <token>` when set (SPEC R2). */
  token?: string;
  /** Aborted when the server starts draining (SPEC R3). */
  drain: AbortSignal;
  /** Client and worker identities (SPEC R7); without it only `token` is checked. */
  identities?: Identities;
}

/**
 * The client making `call` (SPEC R2, R7): checks its token and names it.
 * @throws BerthError unauthenticated when a token is required and missing or wrong.
 */
export function authenticate(ctx: EdgeContext, call: CallCredentials): Caller {
  if (ctx.identities) return ctx.identities.client(call);
  checkToken(call.metadata, ctx.token);
  return { name: '', scoped: false };
}

/** Throws INVALID_ARGUMENT for a request body the decoder could not read (see decode.ts). */
function decoded<T>(request: T): T {
  if (isUndecodable(request)) throw new BerthError('invalid_argument', `request: undecodable message body (${request.why})`);
  return request;
}

/** Writes messages to a server stream, waiting for 'drain' when the transport buffer is full. */
export interface Sink<T> {
  /** Resolves once the message is handed to the transport; rejects with CANCELLED if the call ended. */
  write(message: T): Promise<void>;
}

/**
 * Throws UNAUTHENTICATED unless `metadata` carries the token (as `authorization: Bearer <token>`
 * or `x-berth-token`). No-op when no token is configured.
 */
export function checkToken(metadata: Metadata, token: string | undefined): void {
  if (!token) return;
  const auth = String(metadata.get('authorization')[0] ?? '');
  const given = auth.startsWith('Bearer ') ? auth.slice(7) : String(metadata.get('x-berth-token')[0] ?? '');
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  if (a.length !== b.length || !timingSafeEqual(a, b)) {
    throw new BerthError('unauthenticated', given ? 'wrong token' : 'missing token: set BERTH_TOKEN');
  }
}

/** Events a call can emit that end it from the client side. */
type CallLike = NodeJS.EventEmitter & { cancelled: boolean };

/**
 * One AbortSignal for a call: aborted when the client cancels, disconnects or its deadline
 * passes ('cancelled'), when the server drains (if `followDrain`), and — for client streams when
 * `endAborts` — when the client half-closes ('end').
 */
export function callSignal(call: CallLike, drain: AbortSignal, opts: { endAborts?: boolean; followDrain?: boolean } = {}): AbortSignal {
  const ac = new AbortController();
  const abort = (reason: string) => () =>
    ac.abort(reason === 'drain' ? new BerthError('unavailable', 'server is draining') : new BerthError('cancelled', reason));
  if (call.cancelled) ac.abort(new BerthError('cancelled', 'cancelled'));
  call.once('cancelled', abort('the client cancelled the call or its connection was lost'));
  call.once('close', abort('call closed'));
  if (opts.endAborts) call.once('end', abort('half-closed by client'));
  if (opts.followDrain !== false) {
    if (drain.aborted) ac.abort(new BerthError('unavailable', 'server is draining'));
    else drain.addEventListener('abort', abort('drain'), { once: true, signal: ac.signal });
  }
  return ac.signal;
}

/** A Sink over a writable server stream; honours backpressure and fails once the call is gone. */
export function makeSink<T>(call: ServerWritableStream<unknown, T> | ServerDuplexStream<unknown, T>): Sink<T> {
  return {
    write(message: T) {
      return new Promise<void>((resolve, reject) => {
        if (call.cancelled || call.destroyed || call.writableEnded) {
          return reject(new BerthError('cancelled', 'call ended'));
        }
        const ok = call.write(message);
        if (ok) return resolve();
        const onDrain = () => { cleanup(); resolve(); };
        const onGone = () => { cleanup(); reject(new BerthError('cancelled', 'call ended')); };
        const cleanup = () => { call.off('drain', onDrain); call.off('cancelled', onGone); call.off('close', onGone); };
        call.once('drain', onDrain);
        call.once('cancelled', onGone);
        call.once('close', onGone);
      });
    },
  };
}

/** Wraps a unary domain function: token check, signal, error mapping. */
export function unary<Req, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (req: Req, signal: AbortSignal, caller: Caller) => Promise<Res> | Res,
): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    void (async () => {
      try {
        const caller = authenticate(ctx, call);
        const res = await fn(decoded(call.request), callSignal(call, ctx.drain, { followDrain: false }), caller);
        callback(null, res);
      } catch (err) {
        callback(toStatus(err, ctx.log, rpc));
      }
    })();
  };
}

/**
 * Wraps a server-streaming domain function; the stream is ended when `fn` resolves.
 * `followDrain: false` keeps the signal alive through drain (in-flight work gets the grace).
 */
export function serverStream<Req, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (req: Req, sink: Sink<Res>, signal: AbortSignal, caller: Caller) => Promise<void>,
  opts: { followDrain?: boolean } = {},
): handleServerStreamingCall<Req, Res> {
  return (call: ServerWritableStream<Req, Res>) => {
    void (async () => {
      try {
        const caller = authenticate(ctx, call);
        await fn(decoded(call.request), makeSink(call), callSignal(call, ctx.drain, opts), caller);
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toStatus(err, ctx.log, rpc));
      }
    })();
  };
}

/**
 * Client messages of a stream until half-close, or until `signal` aborts (then it just stops:
 * the caller reads `signal.reason`). Never destroys the call, so a status can still be sent.
 */
export async function* readMessages<T>(call: NodeJS.ReadableStream & { iterator?: unknown }, signal: AbortSignal): AsyncGenerator<T> {
  const it = (call as unknown as { iterator(o: { destroyOnReturn: boolean }): AsyncIterator<T> }).iterator({ destroyOnReturn: false });
  for (;;) {
    const r = await nextOrAbort(it, signal);
    if (r.done) return;
    yield decoded(r.value);
  }
}

/**
 * Wraps a bidi domain function. `messages` iterates client messages until half-close; `signal`
 * follows cancel/disconnect/drain (not half-close: the domain decides what 'end' means).
 */
export function bidiStream<Req, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (messages: AsyncIterable<Req>, sink: Sink<Res>, signal: AbortSignal, caller: Caller) => Promise<void>,
): handleBidiStreamingCall<Req, Res> {
  return (call: ServerDuplexStream<Req, Res>) => {
    void (async () => {
      try {
        const caller = authenticate(ctx, call);
        const signal = callSignal(call, ctx.drain);
        await fn(readMessages<Req>(call, signal), makeSink(call), signal, caller);
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toStatus(err, ctx.log, rpc));
      }
    })();
  };
}
