/**
 * WatchEvents RPC: first a `watch_started` event (the subscription is live; its seq is the last
 * event before it), then every event in order, until the client cancels or the server's drain is
 * over (watchers see the drain itself: `server_draining`, abandoned waiters, calls finishing).
 * A reader too slow to keep up with MAX_BACKLOG events is ended with
 * RESOURCE_EXHAUSTED rather than letting the server buffer without bound. When client identities
 * are configured, claim ids are shown only for the caller's own held claims (SPEC R7).
 */
import type { WatchEventsRequest, WatchEventsResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import type { BerthEvent } from '../../events.js';
import type { ServerContext } from '../context.js';
import { toWatchEvent } from '../convert.js';
import { serverStream } from '../edge.js';

/** Most events buffered for one watcher before it is cut off as a slow reader. */
export const MAX_BACKLOG = 10_000;

/** Builds the WatchEvents handler. */
export function watchEventsHandler(ctx: ServerContext) {
  return serverStream<WatchEventsRequest, WatchEventsResponse>(
    ctx,
    'WatchEvents',
    async (_req, sink, signal, _scope, caller) => {
      const backlog: BerthEvent[] = [];
      let wake: (() => void) | undefined;
      let overflow = false;
      // Scoped callers (SPEC R7) see a claim id only while it is a claim of theirs held now.
      const shown = (e: BerthEvent): BerthEvent =>
        !caller.scoped || !e.claimId || ctx.placer.get(e.claimId)?.ask.owner === caller.name
          ? e
          : { ...e, claimId: '' };
      const unsubscribe = ctx.events.subscribe((e) => {
        if (backlog.length >= MAX_BACKLOG) overflow = true;
        else backlog.push(shown(e));
        wake?.();
      });
      backlog.push({ kind: 'watch_started', detail: 'subscribed', seq: ctx.events.seq, timeMs: Date.now() });
      const onAbort = () => wake?.();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        while (!signal.aborted) {
          if (overflow)
            throw new BerthError('resource_exhausted', `slow reader: more than ${MAX_BACKLOG} events behind`);
          const e = backlog.shift();
          if (e) {
            await sink.write(toWatchEvent(e));
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      } finally {
        unsubscribe();
        signal.removeEventListener('abort', onAbort);
      }
    },
    { drain: 'lingers' },
  );
}
