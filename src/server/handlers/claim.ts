/**
 * Claim RPC: the lease (SPEC "The contract", P6, P8). First client message: an Ask. Server
 * writes zero or more Queued, then Granted. The lease ends on Release (answered by Released),
 * half-close, cancel, disconnect, deadline, error, the machine leaving (UNAVAILABLE), or the drain:
 * a waiting claim ends UNAVAILABLE "server is draining" at once, a held one when the grace ends (R3).
 * Errors: INVALID_ARGUMENT naming the field (bad ask, a first message that is not an ask, a second
 * ask, anything but Release after the grant); FAILED_PRECONDITION naming a missing label, or the
 * dimension no machine can hold for an `on_oversize: fail` ask (issue 13).
 */
import type { ClaimRequest, ClaimResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { Grant, QueuedInfo } from '../../placement/types.js';
import type { ServerContext } from '../context.js';
import { toGranted, toQueued } from '../convert.js';
import { bidiStream, type CallScope } from '../edge.js';

type Next = IteratorResult<ClaimRequest>;
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
    if (first.value.kind?.$case !== 'ask')
      throw new BerthError(
        'invalid_argument',
        `kind: the first message must be an ask (got ${first.value.kind?.$case ?? 'nothing'})`,
      );
    const ask = { ...normalizeAsk(first.value.kind.value, 'ask'), owner: caller.scoped ? caller.name : undefined };

    // Wait for the grant on the call's own signal while watching the stream: any client message or
    // half-close abandons the wait (by ending the call's scope: no second controller, no
    // AbortSignal.any). A grant made at once skips the race and the write chain (issue 9).
    if (scope.aborted) throw scope.reason; // an ended call (drain, cancel) gets no grant
    const pending = it.next();
    let writes: Promise<void> | undefined;
    const onQueued = (q: QueuedInfo) => {
      const m: ClaimResponse = { kind: { $case: 'queued', value: toQueued(q) } };
      writes = (writes ?? Promise.resolve()).then(() => sink.write(m));
      writes.catch(() => {});
    };
    const decideStart = performance.now();
    // The call's AbortSignal is made only if the claim has to wait (issue 9).
    const claimed = ctx.placer.claimOrWait(ask, { signal: () => scope.signal, onQueued });
    ctx.metrics?.decided(performance.now() - decideStart);
    const grant = claimed instanceof Promise ? await waitForGrant(claimed, pending, scope, ctx) : claimed;
    if (!grant) return; // half-closed or released before the grant
    // A held lease is in-flight work: the drain gives it the grace (SPEC R3), then ends it UNAVAILABLE.
    scope.keepThroughDrain();

    try {
      if (writes) await writes;
      if (ctx.journal) await durable(ctx, grant.claimId); // Granted only once the grant is journaled (SPEC S4)
      await sink.write({ kind: { $case: 'granted', value: toGranted(grant) } });
      // Only a worker can leave; the engine host cannot (and reading `lost` would make a controller).
      const next = grant.remote ? await Promise.race([pending, lostOf(grant)]) : await pending;
      if ('lost' in next) throw next.lost;
      if (next.done) {
        if (scope.aborted) throw scope.reason; // drain ends the lease UNAVAILABLE; a cancelled call hears nothing
        ctx.placer.release(grant.claimId, 'half-closed'); // the outcome events and metrics name (issue 13)
        return; // half-close ends the lease
      }
      if (next.value.kind?.$case === 'release') {
        ctx.placer.release(grant.claimId, 'released');
        if (ctx.journal) await durable(ctx, grant.claimId); // Released only once the release is journaled
        await sink.write({ kind: { $case: 'released', value: { claimId: grant.claimId } } });
        return;
      }
      throw unexpected(next);
    } finally {
      // Ended by the drain: the runs inside keep the drain's grace (SPEC R3); any other ending stops them (R5).
      const draining = scope.aborted && ctx.live.draining;
      ctx.placer.release(grant.claimId, draining ? 'server draining' : scope.aborted ? 'stream ended' : 'released', {
        keepRuns: draining,
      });
    }
  });
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
 * @throws BerthError UNAVAILABLE "journal … write failed: …" when it could not be written (the claim is released).
 */
async function durable(ctx: ServerContext, claimId: string): Promise<void> {
  try {
    await ctx.journal?.flushed();
  } catch (err) {
    throw new BerthError('unavailable', `claim ${claimId}: ${(err as Error).message}`);
  }
}

/** Resolves when the worker holding `grant` leaves (SPEC W3). */
function lostOf(grant: Grant): Promise<Lost> {
  return new Promise<Lost>((resolve) => {
    if (grant.lost.aborted) resolve({ lost: grant.lost.reason });
    grant.lost.addEventListener('abort', () => resolve({ lost: grant.lost.reason }), { once: true });
  });
}

function unexpected(n: Next): BerthError {
  const got = n.done ? 'end' : (n.value.kind?.$case ?? 'an empty message');
  return new BerthError(
    'invalid_argument',
    `kind: only a release may follow the ask (got ${got === 'ask' ? 'a second ask' : got})`,
  );
}
