/**
 * The Claim stream while a preempted claim waits again at its place (SPEC Q2 requeue, docs/priorities.md): the next
 * grant races the client's messages. A Release with requeue now is a no-op (the claim waits again already: a late or
 * repeated make-room must not end it); a plain Release gives the waiting claim up and is answered by Released; a
 * half-close gives it up; anything else is INVALID_ARGUMENT, as after an ask.
 */
import type { ClaimRequest, ClaimResponse } from '../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../errors.js';
import type { Grant } from '../placement/types.js';
import type { ServerContext } from './context.js';
import type { CallScope, Sink } from './edge.js';

type Next = IteratorResult<ClaimRequest>;

/** A preempted claim waiting again: its next grant, the read pending on the stream, and its (new) claim id. */
export interface Again {
  granted: Promise<Grant>;
  pending: Promise<Next>;
  /** Its claim id as it waits again (from its Queued), for Released; '' before one was heard. */
  claimId: () => string;
}

/**
 * Waits for `again`'s grant while reading the stream (see the header). Resolves with the grant and the read now
 * pending, or `grant` undefined when the client gave the claim up; throws the drain's UNAVAILABLE, a claim error, or
 * INVALID_ARGUMENT for a message that may not come now.
 */
export async function waitAgain(
  ctx: ServerContext,
  again: Again,
  it: AsyncIterator<ClaimRequest>,
  sink: Sink<ClaimResponse>,
  scope: CallScope,
): Promise<{ grant?: Grant; pending: Promise<Next> }> {
  let pending = again.pending;
  const granted = again.granted.then(
    (g) => ({ kind: 'granted' as const, g }),
    (err: unknown) => ({ kind: 'failed' as const, err }),
  );
  for (;;) {
    const first = await Promise.race([granted, pending.then((r) => ({ kind: 'stream' as const, r }))]);
    if (first.kind === 'granted') return { grant: first.g, pending };
    if (first.kind === 'failed') throw scope.aborted ? scope.reason : first.err;
    const r = first.r;
    if (!r.done && r.value.kind?.$case === 'release' && r.value.kind.value.requeue) {
      pending = it.next(); // it waits again already: nothing to do
      continue;
    }
    const abandoned = new BerthError('cancelled', 'abandoned while waiting again');
    scope.abort(abandoned); // the wait's signal: the placer takes it out of the queue
    const outcome = await again.granted.then(
      (g) => g,
      () => undefined,
    );
    if (outcome) ctx.placer.release(outcome.claimId, 'abandoned');
    if (scope.reason !== abandoned) throw scope.reason; // drain: UNAVAILABLE; cancel: nobody is listening
    if (r.done) return { pending };
    if (r.value.kind?.$case === 'release') {
      await sink.write({ kind: { $case: 'released', value: { claimId: again.claimId() } } });
      return { pending };
    }
    throw unexpected(r);
  }
}

/** INVALID_ARGUMENT for a message that may not follow the ask. */
export function unexpected(n: Next): BerthError {
  const got = n.done ? 'end' : (n.value.kind?.$case ?? 'an empty message');
  return new BerthError(
    'invalid_argument',
    `kind: only a release may follow the ask (got ${got === 'ask' ? 'a second ask' : got})`,
  );
}
