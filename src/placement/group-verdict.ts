/**
 * Satisfiable for a group (rule G8): what `ClaimGroup` would meet now, changing nothing. RUNS_NOW when every member
 * fits now behind every waiter (and no group waits before it); WAITS when some set of attached machines could hold
 * it; WAITS_FOR_PROVISIONER when a member waits for a machine a provisioner could start; IMPOSSIBLE when no set of
 * machines could ever hold it (rule G5) or a member names a label or resource no machine has. `detail` is empty when
 * it runs now, else names the member: "members[i].<dimension>: …".
 */
import { arriving } from './order.js';
import { BerthError } from '../errors.js';
import type { GroupStrategy } from './group-fit.js';
import type { GroupBook } from './groups.js';
import type { VerdictKind } from './oversize.js';
import type { NormalizedAsk } from './types.js';

/** A group's verdict: the kind, the blocking member's dimension ('' when it runs now) and why. */
export interface GroupVerdict {
  verdict: VerdictKind;
  limiting: string;
  detail: string;
}

/**
 * Judges `asks` by `strategy` against `book` now. @throws BerthError INVALID_ARGUMENT for a member that takes a
 * cluster-wide pool (as ClaimGroup would); any other refusal is an IMPOSSIBLE verdict.
 */
export function groupVerdict(
  book: GroupBook,
  asks: NormalizedAsk[],
  strategy: GroupStrategy,
  priority = 0,
): GroupVerdict {
  let judge: boolean;
  try {
    judge = book.checkMembers(asks);
  } catch (err) {
    if (!(err instanceof BerthError) || err.kind !== 'failed_precondition') throw err;
    return { verdict: 'impossible', limiting: dimensionOf(err.message), detail: err.message };
  }
  const now = book.waiting.length === 0 ? book.fitNow(asks, strategy, arriving(priority)) : undefined;
  if (now?.machines) return { verdict: 'runs_now', limiting: '', detail: '' };
  const never = book.neverFits(asks, strategy);
  if (never && judge) return { verdict: 'impossible', limiting: dimensionOf(never), detail: never };
  const r = now?.r;
  const miss = r && !('at' in r) ? r : undefined;
  let why = miss
    ? `members[${miss.member}].${miss.dimension}: ${miss.detail}`
    : `members[0]: older groups wait first (${book.waiting.length} waiting)`;
  const prov = book.s.prov;
  // No attached machines could hold it, yet it is not refused: a provisioner covers a member, or machines come back.
  const provisioned = never !== undefined && prov !== undefined && asks.some((a) => prov.covers(a));
  if (never) why = `${never}; ${provisioned ? 'a provisioner can start a machine for it' : 'machines are coming back'}`;
  return {
    verdict: provisioned ? 'waits_for_provisioner' : 'waits',
    limiting: never ? dimensionOf(never) : (miss?.dimension ?? ''),
    detail: why,
  };
}

/** "gpus" of "members[1].gpus: …"; "label" of "members[0]: … label …"; '' when the message names no dimension. */
function dimensionOf(message: string): string {
  const m = message.match(/^members\[\d+\]\.([a-z_]+(?:\.[^:]+)?):/) ?? message.match(/^members\[\d+\]: ask\.([^:]+):/);
  if (m) return m[1];
  return /label/.test(message) ? 'label' : '';
}
