/**
 * ClaimGroup RPC (docs/rules.md G1–G5, G7): one stream is one lease for a set of asks. First client message: a
 * GroupAsk. Server writes zero or more GroupQueued, then one GroupGranted naming each member's machine and
 * allocation, with a resume token, once the group is journaled (SPEC S4). Or first message: a GroupResume (group id
 * + token) taking back a group restored after a restart, answered by the same GroupGranted with resumed=true. The
 * lease ends on GroupRelease (answered by GroupReleased), half-close, cancel, disconnect, the drain (UNAVAILABLE) or
 * a member's machine leaving (UNAVAILABLE naming the member): every ending gives every member back (SPEC P8).
 * Errors: INVALID_ARGUMENT naming `members[i].<field>`, a first message that is neither ask nor resume, more than
 * MAX_MEMBERS, anything but a release after the grant; FAILED_PRECONDITION naming `members[i]` and the dimension
 * (rule G5); NOT_FOUND for a resume no awaiting group matches; UNAVAILABLE when the journal could not be written.
 */
import type { ClaimGroupRequest, ClaimGroupResponse, GroupAsk } from '../../../generated/ts/berth/v1/groups.js';
import { BerthError } from '../../errors.js';
import { unjournaled } from '../../journal/journal.js';
import { checkPriority, normalizeAsk } from '../../placement/ask.js';
import type { GroupGrant } from '../../placement/group-books.js';
import type { GroupStrategy } from '../../placement/group-fit.js';
import type { NormalizedAsk } from '../../placement/types.js';
import type { GroupQueuedInfo } from '../../placement/groups.js';
import type { PreemptionNotice } from '../../placement/preempt.js';
import type { ServerContext } from '../context.js';
import { bidiStream, type CallScope, type Sink } from '../edge.js';
import { fromOnMemberLost, fromStrategy, toGroupGranted, toGroupQueued } from '../group-convert.js';
import { hashToken, newResumeToken } from '../resume-tokens.js';

type Next = IteratorResult<ClaimGroupRequest>;

/** Most members one group may have. */
export const MAX_MEMBERS = 1000;

/** Builds the ClaimGroup handler. */
export function claimGroupHandler(ctx: ServerContext) {
  return bidiStream<ClaimGroupRequest, ClaimGroupResponse>(ctx, 'ClaimGroup', async (messages, sink, scope, caller) => {
    const it = messages[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) {
      if (scope.aborted) throw scope.reason;
      return;
    }
    const owner = caller.scoped ? caller.name : undefined;
    if (first.value.kind?.$case === 'resume') {
      const r = first.value.kind.value;
      const grant = ctx.groupHolds.resume(r.groupId, r.resumeToken, owner);
      const pending = it.next();
      pending.catch(() => {});
      scope.keepThroughDrain();
      await lease(ctx, grant, r.resumeToken, true, () => Promise.resolve(), pending, sink, scope);
      return;
    }
    if (first.value.kind?.$case !== 'ask')
      throw new BerthError(
        'invalid_argument',
        `kind: the first message must be an ask or a resume (got ${first.value.kind?.$case ?? 'nothing'})`,
      );
    const { asks, strategy, onMemberLost, priority, priorityClass } = groupAsks(first.value.kind.value, owner);
    if (scope.aborted) throw scope.reason;

    const pending = it.next();
    pending.catch(() => {});
    let writes = Promise.resolve();
    const onQueued = (q: GroupQueuedInfo) => {
      writes = writes.then(() => sink.write({ kind: { $case: 'queued', value: toGroupQueued(q) } }));
      writes.catch(() => {});
    };
    const claimed = ctx.placer.claimGroup(asks, strategy, {
      signal: scope.signal,
      onQueued,
      onMemberLost,
      priority,
      priorityClass,
    });
    const grant = claimed instanceof Promise ? await waitForGroup(ctx, claimed, pending, scope) : claimed;
    if (!grant) return;
    scope.keepThroughDrain();
    await lease(ctx, grant, newResumeToken(), false, () => writes, pending, sink, scope);
  });
}

/**
 * The members of `g` normalized, each with `owner` (SPEC R7), and its strategy.
 * @throws BerthError INVALID_ARGUMENT naming `members` (none, or more than MAX_MEMBERS), `members[i].<field>` (a bad
 *   ask, hold_ms, a GPU share or type: not taken by group members yet) or `strategy`.
 */
export function groupAsks(
  g: GroupAsk,
  owner: string | undefined,
): {
  asks: NormalizedAsk[];
  strategy: GroupStrategy;
  onMemberLost: 'requeue' | 'fail';
  priority?: number;
  priorityClass?: string;
} {
  if (g.members.length === 0 || g.members.length > MAX_MEMBERS)
    throw new BerthError('invalid_argument', `members: 1 to ${MAX_MEMBERS} asks (got ${g.members.length})`);
  const strategy = fromStrategy(g.strategy);
  const asks = g.members.map((a, i) => {
    const n = normalizeAsk(a, `members[${i}]`);
    if (n.holdMs)
      throw new BerthError(
        'invalid_argument',
        `members[${i}].hold_ms: a group member cannot be held (got ${n.holdMs})`,
      );
    // The group search books whole GPUs only (docs/groups.md): shares and types are single-claim asks for now.
    if (n.gpuShare)
      throw new BerthError(
        'invalid_argument',
        `members[${i}].gpu_share: a group member takes whole GPUs (got ${n.gpuShare / 10_000})`,
      );
    if (n.gpuType)
      throw new BerthError(
        'invalid_argument',
        `members[${i}].gpu_type: a group member cannot ask a GPU type (got ${JSON.stringify(n.gpuType)})`,
      );
    if (n.priority !== undefined || n.priorityClass)
      throw new BerthError(
        'invalid_argument',
        `members[${i}].priority: a member takes the group's priority: set GroupAsk.priority or priority_class ` +
          `(got ${JSON.stringify(n.priority ?? n.priorityClass)})`,
      );
    return { ...n, owner };
  });
  checkPriority(g.priority, g.priorityClass || undefined, '');
  const priority = { priority: g.priority, priorityClass: g.priorityClass || undefined };
  return { asks, strategy, onMemberLost: fromOnMemberLost(g.onMemberLost), ...priority };
}

/**
 * Serves a granted group: writes GroupGranted (with `token`, once the group is journaled with its hash, rule G7),
 * then waits for release, half-close, a member lost or the stream's end. A group requeued after a loss (rule G9)
 * waits again on this stream — its GroupQueued is written by the claim's onQueued — and each new grant is written
 * and served the same way.
 */
async function lease(
  ctx: ServerContext,
  first: GroupGrant,
  token: string,
  resumed: boolean,
  writes: () => Promise<void>,
  pending: Promise<Next>,
  sink: Sink<ClaimGroupResponse>,
  scope: CallScope,
): Promise<void> {
  let grant = first;
  const id = grant.groupId;
  const hash = hashToken(token).toString('base64');
  let why = 'stream ended';
  let off: (() => void) | undefined;
  const notice = (n: PreemptionNotice) => {
    const value = {
      byClaimId: n.by,
      byPriority: n.byPriority,
      graceMs: n.graceMs,
      machine: n.machine,
      detail: n.detail,
    };
    void sink.write({ kind: { $case: 'preempting', value } }).catch(() => {});
  };
  try {
    for (let again = false; ; again = true) {
      await writes();
      ctx.journal?.groupHolder(id, hash); // taken back within --claim-hold after a restart with this token (G7)
      await durable(ctx, id); // GroupGranted only once the group is journaled (SPEC S4)
      await sink.write({ kind: { $case: 'granted', value: toGroupGranted(grant, token, resumed && !again) } });
      // With preemption configured, a higher claim may need a member's room: the group hears it, and goes whole
      // when the grace runs out (SPEC Q2, rule G1; the lease then ends ABORTED).
      if (ctx.placer.preemption) ctx.preemptNotices.set(id, notice);
      const g = grant;
      const lost = new Promise<{ lost: unknown }>((resolve) => {
        const onLost = () => resolve({ lost: g.lost.reason });
        if (g.lost.aborted) return onLost();
        g.lost.addEventListener('abort', onLost, { once: true });
        off = () => g.lost.removeEventListener('abort', onLost);
      });
      const next = await Promise.race([pending, lost]);
      off?.();
      if ('lost' in next) {
        if (!g.requeued) throw next.lost;
        const regranted = await waitForGroup(ctx, g.requeued, pending, scope); // rule G9: the whole group waits again
        if (!regranted) return;
        grant = regranted;
        continue;
      }
      if (next.done) {
        if (scope.aborted) throw scope.reason;
        why = 'half-closed';
        return;
      }
      if (next.value.kind?.$case === 'release') {
        why = 'released';
        ctx.placer.releaseGroup(id, why);
        await durable(ctx, id); // GroupReleased only once the release is journaled
        await sink.write({ kind: { $case: 'released', value: { groupId: id } } });
        return;
      }
      throw new BerthError(
        'invalid_argument',
        `kind: only a release may follow the ask (got ${next.value.kind?.$case ?? 'an empty message'})`,
      );
    }
  } finally {
    off?.();
    if (ctx.preemptNotices.get(id) === notice) ctx.preemptNotices.delete(id);
    const draining = scope.aborted && ctx.live.draining;
    ctx.placer.releaseGroup(id, draining ? 'server draining' : why);
  }
}

/** Waits until the journal holds what the placer did to group `id`. @throws BerthError as `unjournaled` says. */
async function durable(ctx: ServerContext, id: string): Promise<void> {
  try {
    await ctx.journal?.flushed(id);
  } catch (err) {
    throw unjournaled(id, err);
  }
}

/**
 * Waits for a queued group while watching the stream: a client message or half-close first abandons the wait (and
 * gives back a grant that raced it). Resolves with the grant, or undefined when the client left first.
 */
async function waitForGroup(
  ctx: ServerContext,
  claimed: Promise<GroupGrant>,
  pending: Promise<Next>,
  scope: CallScope,
): Promise<GroupGrant | undefined> {
  const first = await Promise.race([
    claimed.then(
      (g) => ({ kind: 'granted' as const, g }),
      (err: unknown) => ({ kind: 'failed' as const, err }),
    ),
    pending.then((r) => ({ kind: 'stream' as const, r })),
  ]);
  if (first.kind === 'granted') return first.g;
  if (first.kind === 'failed') throw scope.aborted ? scope.reason : first.err;
  const abandoned = new BerthError('cancelled', 'abandoned while waiting');
  scope.abort(abandoned);
  const raced = await claimed.then(
    (g) => g,
    () => undefined,
  );
  if (raced) ctx.placer.releaseGroup(raced.groupId, 'abandoned');
  if (scope.reason !== abandoned) throw scope.reason;
  if (first.r.done || first.r.value.kind?.$case === 'release') return undefined;
  throw new BerthError(
    'invalid_argument',
    `kind: only a release may follow the ask (got ${first.r.value.kind?.$case ?? 'an empty message'})`,
  );
}
