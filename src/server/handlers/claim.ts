/**
 * Claim RPC: the lease (SPEC "The contract", P6, P8). First client message: an Ask. Server
 * writes zero or more Queued, then Granted. The lease ends on Release (answered by Released),
 * half-close, cancel, disconnect, deadline, error, the machine leaving (UNAVAILABLE), or the drain:
 * a waiting claim ends UNAVAILABLE "server is draining" at once, a held one when the grace ends (R3).
 * With preemption configured (SPEC Q2), a held claim may hear one Preempting (who needs its room, the grace); if it
 * is not released within the grace, berth releases it. Then, by default (`on_preempt` requeue), the claim waits
 * again at its original place: the stream hears Queued with requeued set and later a new Granted (a new claim id),
 * and is a lease again; a Release with requeue after the notice gives the room back at once the same way. With
 * `on_preempt: cancel` the stream ends ABORTED "claim <id> released (preempted by …)". Every Granted carries a
 * resume token. A claim whose ask has hold_ms > 0 is not given back when its
 * stream ends without Release or half-close (cancel, disconnect, error): it awaits its holder for
 * hold_ms (claim-holds.ts, SPEC S3), and a first message `resume` (claim id + token) takes it back,
 * answered by the same Granted with resumed=true; the stream is then a lease as after an ask.
 * Errors: INVALID_ARGUMENT naming the field (bad ask or resume, a first message that is neither, a
 * second ask, anything but Release after the grant); FAILED_PRECONDITION naming a missing label, or
 * the dimension no machine can hold for an `on_oversize: fail` ask (issue 13); for a resume, NOT_FOUND
 * (unknown id, wrong token, another identity's claim: one message) or FAILED_PRECONDITION "held by a
 * live stream" (see ClaimHolds.resume).
 */
import type { ClaimRequest, ClaimResponse, Granted, Resume } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { unjournaled } from '../../journal/journal.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { PreemptionNotice } from '../../placement/preempt.js';
import type { Requeued } from '../../placement/requeue.js';
import type { Grant, QueuedInfo } from '../../placement/types.js';
import type { ServerContext } from '../context.js';
import { toGranted, toPreempting, toQueued } from '../convert.js';
import { hashToken } from '../resume-tokens.js';
import { bidiStream, type CallScope, type Sink } from '../edge.js';
import type { Caller } from '../identity.js';
import { type Again, unexpected, waitAgain } from '../claim-requeue.js';

type Next = IteratorResult<ClaimRequest>;

/** How long an end of messages waits for a following cancel before it counts as a half-close (held claims). */
const HALF_CLOSE_SETTLE_MS = 100;
type Lost = { lost: unknown };

/** Builds the Claim handler. */
export function claimHandler(ctx: ServerContext) {
  return bidiStream<ClaimRequest, ClaimResponse>(ctx, 'Claim', async (messages, sink, scope, caller) => {
    const it = messages[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) {
      if (scope.aborted) throw scope.reason; // draining: UNAVAILABLE (a cancelled call hears nothing)
      return; // half-closed before asking: nothing to give back
    }
    if (first.value.kind?.$case === 'resume') return resume(ctx, first.value.kind.value, it, sink, scope, caller);
    if (first.value.kind?.$case !== 'ask')
      throw new BerthError(
        'invalid_argument',
        `kind: the first message must be an ask or a resume (got ${first.value.kind?.$case ?? 'nothing'})`,
      );
    const ask = { ...normalizeAsk(first.value.kind.value, 'ask'), owner: caller.scoped ? caller.name : undefined };

    // Wait for the grant on the call's own signal while watching the stream: any client message or
    // half-close abandons the wait (by ending the call's scope: no second controller, no
    // AbortSignal.any). A grant made at once skips the race and the write chain (issue 9).
    if (scope.aborted) throw scope.reason; // an ended call (drain, cancel) gets no grant
    let pending = it.next();
    const queued = new QueuedWriter(sink);
    const decideStart = performance.now();
    // The call's AbortSignal is made only if the claim has to wait (issue 9).
    const claimed = ctx.placer.claimOrWait(ask, { signal: () => scope.signal, onQueued: queued.write });
    ctx.metrics?.decided(performance.now() - decideStart);
    let grant = claimed instanceof Promise ? await waitForGrant(claimed, pending, scope, ctx) : claimed;
    // A preempted claim that requeues (SPEC Q2) comes back here with its next grant, on the same stream.
    while (grant) {
      // A held lease is in-flight work: the drain gives it the grace (SPEC R3), then ends it UNAVAILABLE.
      scope.keepThroughDrain();
      const token = ctx.holds.issue(grant);
      // Every journaled claim can be taken back within --claim-hold after a restart (SPEC S3, S4): its token's hash.
      ctx.journal?.claimHolder(grant.claimId, hashToken(token).toString('base64'), grant.ask.holdMs ?? 0);
      const granted = { ...toGranted(grant), resumeToken: token };
      const again = await lease(ctx, grant, granted, queued, { it, pending }, sink, scope);
      if (!again) return;
      const next = await waitAgain(ctx, again, it, sink, scope); // no grant: given up meanwhile
      pending = next.pending;
      grant = next.grant;
    }
  });
}

/** Writes each Queued of a claim in order; `flushed` resolves once those written so far are sent. */
class QueuedWriter {
  #writes: Promise<void> | undefined;
  /** The claim id of the last Queued: a requeued claim's new id. */
  claimId = '';
  constructor(readonly sink: Sink<ClaimResponse>) {}

  readonly write = (q: QueuedInfo): void => {
    this.claimId = q.claimId;
    const m: ClaimResponse = { kind: { $case: 'queued', value: toQueued(q) } };
    const w = (this.#writes ?? Promise.resolve()).then(() => this.sink.write(m));
    w.catch(() => {});
    this.#writes = w;
  };

  /** The Queued written so far are sent (undefined when none was written: no await on the hot path). */
  get flushed(): Promise<void> | undefined {
    return this.#writes;
  }
}

/** The client's messages: the iterator and the read now pending on it. */
interface Reading {
  it: AsyncIterator<ClaimRequest>;
  pending: Promise<Next>;
}

/**
 * A Claim stream opened with `resume`: takes back the awaiting claim (ClaimHolds.resume, whose
 * errors it throws), answers the same Granted with resumed=true, then serves the lease.
 */
async function resume(
  ctx: ServerContext,
  r: Resume,
  it: AsyncIterator<ClaimRequest>,
  sink: Sink<ClaimResponse>,
  scope: CallScope,
  caller: Caller,
): Promise<void> {
  if (scope.aborted) throw scope.reason; // draining: UNAVAILABLE, and the claim keeps awaiting its holder
  const grant = ctx.holds.resume(r.claimId, r.resumeToken, caller.scoped ? caller.name : undefined);
  scope.keepThroughDrain();
  const granted = { ...toGranted(grant), resumeToken: r.resumeToken, resumed: true };
  const queued = new QueuedWriter(sink);
  let pending = it.next();
  let again = await lease(ctx, grant, granted, queued, { it, pending }, sink, scope);
  while (again) {
    const waited = await waitAgain(ctx, again, it, sink, scope);
    pending = waited.pending;
    const next = waited.grant;
    if (!next) return;
    const token = ctx.holds.issue(next);
    ctx.journal?.claimHolder(next.claimId, hashToken(token).toString('base64'), next.ask.holdMs ?? 0);
    again = await lease(ctx, next, { ...toGranted(next), resumeToken: token }, queued, { it, pending }, sink, scope);
  }
}

/**
 * Serves a granted lease on its stream: writes `granted`, then waits for Release (answered by
 * Released), half-close, the machine leaving, or the stream's end. Release and half-close give the
 * claim back at once; any other ending lets a claim with a hold await its holder (ClaimHolds.letGo),
 * else gives it back as before (SPEC P8, R3, R5). Resolves with `Again` when the claim was preempted and waits
 * again (SPEC Q2: the grace ran out, or the holder's Release with requeue), else undefined.
 */
async function lease(
  ctx: ServerContext,
  grant: Grant,
  granted: Granted,
  queued: QueuedWriter,
  reading: Reading,
  sink: Sink<ClaimResponse>,
  scope: CallScope,
): Promise<Again | undefined> {
  const { pending } = reading;
  let given = false; // Release or half-close: the holder gave it back (or it waits again)
  let unlisten: (() => void) | undefined;
  let notice: ((n: PreemptionNotice) => void) | undefined;
  let requeue: Requeued | undefined;
  // When the lease fails before it reads `pending` (the journal write failed), the call's error status rejects
  // the read still pending: handled here, not an unhandled rejection that ends the process.
  pending.catch(() => {});
  try {
    const writes = queued.flushed;
    if (writes) await writes;
    if (ctx.journal) await durable(ctx, grant.claimId); // Granted only once the grant is journaled (SPEC S4)
    await sink.write({ kind: { $case: 'granted', value: granted } });
    // With preemption configured (SPEC Q2), the holder may be told to make room, and berth may end the lease.
    const preemptible = ctx.placer.preemption;
    if (preemptible) {
      notice = (n) => void sink.write({ kind: { $case: 'preempting', value: toPreempting(n) } }).catch(() => {});
      ctx.preemptNotices.set(grant.claimId, notice);
      // by default a preempted claim waits again at its place (SPEC Q2, requeue.ts)
      if (grant.ask.onPreempt !== 'cancel')
        requeue = ctx.placer.requeueOnPreempt(grant.claimId, { signal: () => scope.signal, onQueued: queued.write });
    }
    // Only a worker can leave, or a preempted claim end; else `lost` is not read (it would make a controller).
    // The listener goes when the stream does: a claim resumed many times must not pile them up.
    const watchLost = grant.remote || preemptible;
    const lost = watchLost ? lostOf(grant, (f) => (unlisten = f)) : undefined;
    let current = pending;
    let next: Next | Lost;
    for (;;) {
      next = lost ? await Promise.race([current, lost]) : await current;
      // a Release with requeue sent for the grant before this one, read after the regrant: stale, skipped
      if (!requeue || !isMakeRoom(next) || !ctx.placer.staleMakeRoom(grant.claimId)) break;
      current = reading.it.next();
    }
    if ('lost' in next) {
      if (requeue && next.lost instanceof BerthError && next.lost.kind === 'aborted') {
        given = true; // preempted: it waits again once its books are back, and the stream with it
        const again = requeue;
        requeue = undefined; // still watched: the placer files it again when its runs are gone
        return { granted: again.granted, pending: current, claimId: () => queued.claimId };
      }
      throw next.lost;
    }
    if (next.done) {
      // A grpc-js client's cancel sends END_STREAM, then RST_STREAM: the handler sees an end of messages
      // just before the cancel. For a claim with a hold, a half-close (which gives it back) is one that
      // no cancel follows within HALF_CLOSE_SETTLE_MS.
      if (grant.ask.holdMs) await cancelWithin(scope, HALF_CLOSE_SETTLE_MS);
      if (scope.aborted) throw scope.reason; // drain ends the lease UNAVAILABLE; a cancelled call hears nothing
      given = true;
      ctx.placer.release(grant.claimId, 'half-closed'); // the outcome events and metrics name (issue 13)
      return; // half-close ends the lease
    }
    if (next.value.kind?.$case === 'release' && next.value.kind.value.requeue) {
      if (!requeue)
        throw new BerthError(
          'invalid_argument',
          `release.requeue: claim ${grant.claimId} does not requeue (its ask says on_preempt cancel, or nothing ` +
            'preempts here)',
        );
      ctx.placer.makeRoom(grant.claimId); // INVALID_ARGUMENT unless it heard Preempting
      given = true;
      const again = requeue;
      requeue = undefined; // still watched: the placer files it again when its runs are gone
      return { granted: again.granted, pending: reading.it.next(), claimId: () => queued.claimId };
    }
    if (next.value.kind?.$case === 'release') {
      given = true;
      ctx.placer.release(grant.claimId, 'released');
      if (ctx.journal) await durable(ctx, grant.claimId); // Released only once the release is journaled
      await sink.write({ kind: { $case: 'released', value: { claimId: grant.claimId } } });
      return;
    }
    throw unexpected(next);
  } finally {
    unlisten?.();
    requeue?.stop();
    if (notice && ctx.preemptNotices.get(grant.claimId) === notice) ctx.preemptNotices.delete(grant.claimId);
    // Ended by the drain: the runs inside keep the drain's grace (SPEC R3); any other ending stops them (R5).
    const draining = scope.aborted && ctx.live.draining;
    const why = draining ? 'server draining' : scope.aborted ? 'stream ended' : 'released';
    if (given || draining || !ctx.holds.letGo(grant.claimId, scope.aborted ? 'stream ended' : 'stream error')) {
      ctx.holds.forget(grant.claimId);
      ctx.placer.release(grant.claimId, why, { keepRuns: draining });
    }
  }
}

/**
 * Waits for a claim that did not get its grant at once, racing it against the stream: a client
 * message or half-close first abandons the wait. Resolves with the grant, or undefined when the
 * client half-closed or released before it; throws the drain's UNAVAILABLE, a claim error, or
 * INVALID_ARGUMENT for any other message.
 */
async function waitForGrant(
  claimed: Promise<Grant>,
  pending: Promise<Next>,
  scope: CallScope,
  ctx: ServerContext,
): Promise<Grant | undefined> {
  const first = await Promise.race([
    claimed.then(
      (g) => ({ kind: 'granted' as const, g }),
      (err: unknown) => ({ kind: 'failed' as const, err }),
    ),
    pending.then((r) => ({ kind: 'stream' as const, r })),
  ]);
  if (first.kind === 'granted') return first.g;
  if (first.kind === 'failed') {
    if (scope.aborted) throw scope.reason;
    throw first.err;
  }
  const abandoned = new BerthError('cancelled', 'abandoned while waiting');
  scope.abort(abandoned);
  const outcome = await claimed.then(
    (g) => g,
    () => undefined,
  );
  if (outcome) ctx.placer.release(outcome.claimId, 'abandoned');
  if (scope.reason !== abandoned) throw scope.reason; // drain: UNAVAILABLE; cancel: nobody is listening
  if (first.r.done) return undefined;
  if (first.r.value.kind?.$case === 'release') return undefined; // released before the grant
  throw unexpected(first.r);
}

/**
 * Waits until the journal holds what the placer did to `claimId`.
 * @throws BerthError UNAVAILABLE "journal … write failed: …" when it could not be written, INVALID_ARGUMENT when
 *   the claim's record is too large to journal (the claim is released either way).
 */
async function durable(ctx: ServerContext, claimId: string): Promise<void> {
  try {
    await ctx.journal?.flushed(claimId);
  } catch (err) {
    throw unjournaled(claimId, err);
  }
}

/** Resolves once `scope` ends, or after `ms` if it does not. */
function cancelWithin(scope: CallScope, ms: number): Promise<void> {
  if (scope.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      off();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const off = scope.onAbort(done);
  });
}

/** True for a client's Release with requeue (SPEC Q2 make-room). */
function isMakeRoom(n: Next | Lost): boolean {
  return !('lost' in n) && !n.done && n.value.kind?.$case === 'release' && n.value.kind.value.requeue === true;
}

/** Resolves when the worker holding `grant` leaves (SPEC W3); `off` receives the function that stops listening. */
function lostOf(grant: Grant, off: (unlisten: () => void) => void): Promise<Lost> {
  return new Promise<Lost>((resolve) => {
    if (grant.lost.aborted) resolve({ lost: grant.lost.reason });
    const onLost = () => resolve({ lost: grant.lost.reason });
    grant.lost.addEventListener('abort', onLost, { once: true });
    off(() => grant.lost.removeEventListener('abort', onLost));
  });
}
