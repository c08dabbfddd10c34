/**
 * Claim RPC: the lease (SPEC "The contract", P6, P8). First client message: an Ask. Server
 * writes zero or more Queued, then Granted. The lease ends on Release (answered by Released),
 * half-close, cancel, disconnect, deadline, drain, error, or the machine leaving (UNAVAILABLE).
 * Errors: INVALID_ARGUMENT naming the field (bad ask, a first message that is not an ask, a second
 * ask, anything but Release after the grant); FAILED_PRECONDITION naming a missing label.
 */
import type { ClaimRequest, ClaimResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { Grant } from '../../placement/types.js';
import type { ServerContext } from '../context.js';
import { toGranted, toQueued } from '../convert.js';
import { bidiStream, type Sink } from '../edge.js';

type Next = { kind: 'message'; msg: ClaimRequest } | { kind: 'end' } | { kind: 'lost'; err: unknown };

/** Builds the Claim handler. */
export function claimHandler(ctx: ServerContext) {
  return bidiStream<ClaimRequest, ClaimResponse>(ctx, 'Claim', async (messages, sink, signal) => {
    const it = messages[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) return; // half-closed (or cancelled) before asking: nothing to give back
    if (first.value.kind?.$case !== 'ask') throw new BerthError('invalid_argument', `kind: the first message must be an ask (got ${first.value.kind?.$case ?? 'nothing'})`);
    const ask = normalizeAsk(first.value.kind.value, 'ask');
    const nextMessage = (): Promise<Next> => it.next().then((r) => (r.done ? { kind: 'end' } : { kind: 'message', msg: r.value }));

    // Wait for the grant while watching the stream: any client message or half-close abandons the wait.
    const waitAc = new AbortController();
    const waitSignal = AbortSignal.any([signal, waitAc.signal]);
    let writes = Promise.resolve();
    const write = (m: ClaimResponse) => (writes = writes.then(() => sink.write(m)));
    const pending = nextMessage();
    const decideStart = performance.now();
    const claimed = ctx.placer.claim(ask, { signal: waitSignal, onQueued: (q) => void write({ kind: { $case: 'queued', value: toQueued(q) } }).catch(() => {}) });
    ctx.metrics?.decided(performance.now() - decideStart);
    const first2 = await Promise.race([claimed.then((g) => ({ kind: 'granted' as const, g }), (err: unknown) => ({ kind: 'failed' as const, err })), pending]);
    let grant: Grant;
    if (first2.kind === 'granted') {
      grant = first2.g;
    } else if (first2.kind === 'failed') {
      if (signal.aborted) throw signal.reason;
      throw first2.err;
    } else {
      waitAc.abort(new BerthError('cancelled', 'abandoned while waiting'));
      const outcome = await claimed.then((g) => g, () => undefined);
      if (outcome) ctx.placer.release(outcome.claimId, 'abandoned');
      if (signal.aborted) throw signal.reason; // drain: UNAVAILABLE; cancel: nobody is listening
      if (first2.kind === 'end') return;
      if (first2.kind === 'message' && first2.msg.kind?.$case === 'release') return; // released before the grant
      throw unexpected(first2);
    }

    try {
      await writes;
      await sink.write({ kind: { $case: 'granted', value: toGranted(grant) } });
      const lost = new Promise<Next>((resolve) => {
        if (grant.lost.aborted) resolve({ kind: 'lost', err: grant.lost.reason });
        grant.lost.addEventListener('abort', () => resolve({ kind: 'lost', err: grant.lost.reason }), { once: true });
      });
      const next = await Promise.race([pending, lost]);
      if (next.kind === 'lost') throw next.err;
      if (next.kind === 'end') {
        if (signal.aborted) throw signal.reason; // drain ends the lease UNAVAILABLE; a cancelled call hears nothing
        ctx.placer.release(grant.claimId, 'half-closed'); // the outcome events and metrics name (issue 13)
        return; // half-close ends the lease
      }
      if (next.msg.kind?.$case === 'release') {
        ctx.placer.release(grant.claimId, 'released');
        await sink.write({ kind: { $case: 'released', value: { claimId: grant.claimId } } });
        return;
      }
      throw unexpected(next);
    } finally {
      ctx.placer.release(grant.claimId, signal.aborted ? 'stream ended' : 'released');
    }
  });
}

function unexpected(n: Next): BerthError {
  const got = n.kind === 'message' ? n.msg.kind?.$case ?? 'an empty message' : n.kind;
  return new BerthError('invalid_argument', `kind: only a release may follow the ask (got ${got === 'ask' ? 'a second ask' : got})`);
}
