/**
 * The transport edge: turns grpc-js calls into what domain code sees — a request, an AbortSignal
 * and a Sink that honours write()/'drain' — checks the token (SPEC R2), and maps errors through
 * the one status mapper. Domain code never sees a grpc call. At most one AbortController per call; the
 * drain walks the registry of live calls (live-calls.ts) instead of a listener per stream.
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
import { BerthError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { CallScope, type DrainMode, type LiveCalls } from './live-calls.js';
import { readMessages } from './messages.js';
import { isUndecodable } from './decode.js';
import { bearer, sameSecret, type CallCredentials, type Caller, type Identities } from './identity.js';
import { MISSING_TOKEN } from './identity.js';
import { toStatus } from './status.js';

export { CallScope } from './live-calls.js';
export { readMessages } from './messages.js';

/** What every handler factory receives from the server. */
export interface EdgeContext {
  log: Logger;
  /** Shared secret required as `authorization: Bearer <token>` when set (SPEC R2). */
  token?: string;
  /** The registry of calls in progress that the drain walks (SPEC R3); `live.draining` once it started. */
  live: LiveCalls;
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
  if (isUndecodable(request))
    throw new BerthError(
      'invalid_argument',
      request.field ? `${request.field}: ${request.why}` : `request: undecodable message body (${request.why})`,
    );
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
  const given = bearer(metadata);
  if (!sameSecret(given, token)) {
    throw new BerthError('unauthenticated', given ? 'wrong token' : MISSING_TOKEN);
  }
}

/** Events a call can emit that end it from the client side. */
type CallLike = NodeJS.EventEmitter & { cancelled: boolean };

const CANCELLED = 'the client cancelled the call or its connection was lost';

/** Where a call keeps its scope for the shared listeners below (no closure per call, issue 9). */
const SCOPE = Symbol('berth.callScope');
type ScopedCall = CallLike & { [SCOPE]?: CallScope };

// grpc-js emits 'close' and 'cancelled' at the end of every call, also a finished one: once the
// handler is done (scope closed) no error is built for them (issue 11: one stack capture per call).
function endScope(call: ScopedCall, why: string): void {
  const scope = call[SCOPE];
  if (scope && !scope.closed) scope.abort(new BerthError('cancelled', why));
}
function onCancelled(this: ScopedCall): void {
  endScope(this, CANCELLED);
}
function onClose(this: ScopedCall): void {
  endScope(this, 'call closed');
}
function onEnd(this: ScopedCall): void {
  endScope(this, 'half-closed by client');
}

/**
 * The call's CallScope (at most one AbortController per call, issue 9): aborted when the client
 * cancels, disconnects or its deadline passes ('cancelled', 'close'), and — for client streams
 * when `endAborts` — when the client half-closes ('end'). With `live`, the call joins the registry
 * the drain walks (SPEC R3): it ends UNAVAILABLE "server is draining" at the drain unless kept
 * (from the start, or later via keepThroughDrain) or lingering (`drain`: see DrainMode). The
 * caller must `close()` it when done.
 */
export function callScope(
  call: CallLike,
  live: LiveCalls | undefined,
  opts: { endAborts?: boolean; drain?: DrainMode } = {},
): CallScope {
  const scope = new CallScope(live, opts.drain);
  if (call.cancelled) scope.abort(new BerthError('cancelled', CANCELLED));
  (call as ScopedCall)[SCOPE] = scope;
  call.on('cancelled', onCancelled);
  call.on('close', onClose);
  if (opts.endAborts) call.on('end', onEnd);
  live?.add(scope);
  return scope;
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
        const onDrain = () => {
          cleanup();
          resolve();
        };
        const onGone = () => {
          cleanup();
          reject(new BerthError('cancelled', 'call ended'));
        };
        const cleanup = () => {
          call.off('drain', onDrain);
          call.off('cancelled', onGone);
          call.off('close', onGone);
        };
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
      const scope = callScope(call, undefined);
      try {
        const caller = authenticate(ctx, call);
        const res = await fn(decoded(call.request), scope.signal, caller);
        callback(null, res);
      } catch (err) {
        callback(toStatus(err, ctx.log, rpc));
      }
    })();
  };
}

/**
 * Wraps a server-streaming domain function; the stream is ended when `fn` resolves. The call's
 * signal follows the drain (SPEC R3) until `fn` calls `scope.keepThroughDrain()` (in-flight work
 * gets the grace); `drain: 'lingers'` lets it run until the drain is over instead (watchers).
 */
export function serverStream<Req, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (req: Req, sink: Sink<Res>, signal: AbortSignal, scope: CallScope, caller: Caller) => Promise<void>,
  opts: { drain?: DrainMode } = {},
): handleServerStreamingCall<Req, Res> {
  return (call: ServerWritableStream<Req, Res>) => {
    void (async () => {
      const scope = callScope(call, ctx.live, opts);
      try {
        const caller = authenticate(ctx, call);
        await fn(decoded(call.request), makeSink(call), scope.signal, scope, caller);
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toStatus(err, ctx.log, rpc));
      } finally {
        scope.close();
      }
    })();
  };
}

/**
 * Wraps a server-streaming domain function as a unary RPC (issue 24 item 9): its messages are collected in order
 * and answered at once as `wrap(messages)` when `fn` resolves. The call's scope follows the drain as
 * serverStream's does (SPEC R3); the sink rejects with CANCELLED once the client cancelled or disconnected.
 */
export function collected<Req, Msg, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (req: Req, sink: Sink<Msg>, signal: AbortSignal, scope: CallScope, caller: Caller) => Promise<void>,
  wrap: (messages: Msg[]) => Res,
): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    void (async () => {
      const scope = callScope(call, ctx.live);
      const messages: Msg[] = [];
      const sink: Sink<Msg> = {
        write(message: Msg) {
          if (call.cancelled) return Promise.reject(new BerthError('cancelled', 'call ended'));
          messages.push(message);
          return Promise.resolve();
        },
      };
      try {
        const caller = authenticate(ctx, call);
        await fn(decoded(call.request), sink, scope.signal, scope, caller);
        if (!call.cancelled) callback(null, wrap(messages));
      } catch (err) {
        if (!call.cancelled) callback(toStatus(err, ctx.log, rpc));
      } finally {
        scope.close();
      }
    })();
  };
}

/**
 * Wraps a bidi domain function. `messages` iterates client messages until half-close; `scope`
 * ends on cancel/disconnect and the drain until `scope.keepThroughDrain()` (not half-close: the
 * domain decides what 'end' means); `scope.abort(reason)` ends it early. Its AbortSignal
 * (`scope.signal`) is made only if the function reads it (issue 9).
 */
export function bidiStream<Req, Res>(
  ctx: EdgeContext,
  rpc: string,
  fn: (messages: AsyncIterable<Req>, sink: Sink<Res>, scope: CallScope, caller: Caller) => Promise<void>,
): handleBidiStreamingCall<Req, Res> {
  return (call: ServerDuplexStream<Req, Res>) => {
    void (async () => {
      const scope = callScope(call, ctx.live);
      try {
        const caller = authenticate(ctx, call);
        await fn(readMessages<Req>(call, scope, decoded), makeSink(call), scope, caller);
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toStatus(err, ctx.log, rpc));
      } finally {
        scope.close();
      }
    })();
  };
}
