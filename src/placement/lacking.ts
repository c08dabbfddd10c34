/**
 * What a waiting claim waits for, in the Queued detail (SPEC P6, issue 23 item 1): the dimension no machine it may
 * use has free now — `waiting for 40960 MB ram`, `waiting for trainer: 0 of 1 free`, `waiting for 0.5 of a GPU: at
 * most 0.25 of one GPU free` — or a pool short of what
 * it asks behind older waiters: `waiting for license/matlab: 0 of 30 free`. Cost: per machine class able to hold
 * the ask, a binary search in its memory and named-resource indexes (capacity.ts), on the waiting path only.
 */
import type { Amount } from '../resources/books.js';
import { fromUnits } from '../resources/quantity.js';
import { requires } from './choose.js';
import type { PlacerState } from './state.js';
import type { NormalizedAsk } from './types.js';
import { heldBack } from './pool-fit.js';
import type { Waiter } from './waiting.js';

/**
 * The detail's tail (`: waiting for …`), or '' when nothing but cores and GPUs are short. `w`: the waiter, so a
 * pool's free counts what older waiters hold back of it (SPEC P7).
 */
export function lackingDetail(s: PlacerState, ask: NormalizedAsk, amount: Amount, w?: Waiter): string {
  const parts: string[] = [];
  if (amount.ramMb || amount.res) {
    let ram = false;
    const best: Record<string, [number, number]> = {};
    for (const cls of s.machines.classes(requires(ask) ? ask.label : undefined)) {
      if (!cls.holdsEver(amount)) continue;
      if (!ram && (!amount.ramMb || cls.ramFreeSomewhere(amount.ramMb))) ram = true;
      for (const k in amount.res ?? {}) {
        const f = cls.mostFreeOf(k, amount.ramMb);
        if (f && (!best[k] || f[0] > best[k][0])) best[k] = f;
      }
    }
    if (!ram) parts.push(`waiting for ${amount.ramMb} MB ram`);
    for (const k in amount.res ?? {}) {
      const b = best[k];
      if (b && b[0] < (amount.res?.[k] ?? 0))
        parts.push(`waiting for ${k}: ${fromUnits(b[0])} of ${fromUnits(b[1])} free`);
    }
  }
  if (amount.share) {
    let room = 0; // the largest share of one GPU free on a machine it may use
    for (const cls of s.machines.classes(requires(ask) ? ask.label : undefined))
      if (cls.holdsEver(amount)) room = Math.max(room, cls.shareRoom());
    if (room < amount.share)
      parts.push(`waiting for ${fromUnits(amount.share)} of a GPU: at most ${fromUnits(room)} of one GPU free`);
  }
  const back = ask.pools && w ? heldBack(s, ask.pools, w) : undefined;
  for (const k in ask.pools ?? {}) {
    const free = Math.max(0, s.pools.freeOf(k) - (back?.[k] ?? 0));
    if (free < (ask.pools?.[k] ?? 0))
      parts.push(`waiting for ${k}: ${fromUnits(free)} of ${fromUnits(s.pools.total[k])} free`);
  }
  return parts.length ? `: ${parts.join(', ')}` : '';
}
