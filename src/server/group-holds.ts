/**
 * Groups awaiting their holder after a restart (rule G7, SPEC S3/S4). Every GroupGranted carries a resume token; the
 * journal keeps its SHA-256 with the group's record. A starting server restores each journaled group whole and it
 * awaits its holder for `--claim-hold`: a ClaimGroup stream whose first message is `resume` (group id + token) takes
 * it back with the same members, machines and allocations; when the hold runs out every member is released ('hold
 * ran out'); a member's machine that does not come back loses the whole group as ever (rule G1). An awaiting group
 * is kept through the drain (SPEC R3) and released 'server draining' when the grace ends. Tokens are never logged.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Journal } from '../journal/journal.js';
import type { GroupRecord } from '../journal/records.js';
import type { Logger } from '../log/logger.js';
import type { GroupGrant } from '../placement/group-books.js';
import type { Placer } from '../placement/placer.js';
import { CallScope, type LiveCalls } from './live-calls.js';
import { hashToken } from './resume-tokens.js';

/** Longest group id or token a resume may name (ids are `g-<uuid>`, tokens 22 characters). */
const MAX_RESUME_FIELD = 256;

interface Awaiting {
  grant: GroupGrant;
  hash: Buffer;
  since: number;
  timer: NodeJS.Timeout;
  scope: CallScope;
  unlisten: () => void;
}

/** The restored groups awaiting their holder on one server. */
export class GroupHolds {
  readonly #awaiting = new Map<string, Awaiting>();

  constructor(
    private readonly placer: Placer,
    private readonly events: EventBus,
    private readonly live: LiveCalls,
  ) {}

  /** Group `grant` awaits its holder for `holdMs`, resumable with the token whose hashToken is `hash`. */
  hold(grant: GroupGrant, hash: Buffer, holdMs: number): void {
    const id = grant.groupId;
    const timer = setTimeout(() => this.#end(id, 'hold ran out'), holdMs);
    timer.unref();
    const scope = new CallScope(this.live, 'kept');
    scope.onAbort(() => this.#end(id, 'server draining')); // the drain's grace ended (SPEC R3)
    this.live.add(scope);
    const lost = () => this.forget(id); // a member's machine left: the group is gone (rule G1)
    grant.lost.addEventListener('abort', lost, { once: true });
    const unlisten = () => grant.lost.removeEventListener('abort', lost);
    this.#awaiting.set(id, { grant, hash, since: Date.now(), timer, scope, unlisten });
    this.events.emit({
      kind: 'group_awaiting_holder',
      claimId: id,
      detail: `group ${id} awaits its holder for ${holdMs} ms (server restarted)`,
      durationMs: holdMs,
    });
  }

  /**
   * Takes back awaiting group `groupId` for its holder's new stream: the same grant. `owner`: the caller's identity
   * when client identities are configured (SPEC R7).
   * @throws BerthError INVALID_ARGUMENT for an empty or oversized field; NOT_FOUND, with one message, for an unknown
   *   id, a wrong token or another identity's group (ids cannot be probed).
   */
  resume(groupId: string, token: string, owner: string | undefined): GroupGrant {
    for (const [field, v] of [
      ['group_id', groupId],
      ['resume_token', token],
    ] as const) {
      if (!v || v.length > MAX_RESUME_FIELD)
        throw new BerthError(
          'invalid_argument',
          `resume.${field}: ${v ? `at most ${MAX_RESUME_FIELD} characters (got ${v.length})` : 'required'}`,
        );
    }
    const a = this.#awaiting.get(groupId);
    const ok = a && timingSafeEqual(a.hash, hashToken(token)) && a.grant.members[0]?.ask.owner === owner;
    if (!a || !ok || this.placer.heldGroup(groupId) !== a.grant)
      throw new BerthError('not_found', `group ${groupId}: no group of that id and resume token awaits its holder`);
    this.forget(groupId);
    this.events.emit({
      kind: 'group_resumed',
      claimId: groupId,
      detail: `group ${groupId} resumed by its holder after ${Date.now() - a.since} ms`,
      durationMs: Date.now() - a.since,
    });
    return a.grant;
  }

  /** Group `groupId` no longer awaits (resumed, lost): its timer, drain scope and listener go. Idempotent. */
  forget(groupId: string): void {
    const a = this.#awaiting.get(groupId);
    if (!a) return;
    this.#awaiting.delete(groupId);
    clearTimeout(a.timer);
    a.unlisten();
    a.scope.close();
  }

  #end(groupId: string, why: string): void {
    if (!this.#awaiting.has(groupId)) return;
    this.forget(groupId);
    this.placer.releaseGroup(groupId, why);
  }
}

/**
 * Restores the journal's groups (rule G7), each whole or not at all, awaiting its holder for `holdMs`; a group that
 * cannot be (a member's machine or resources gone) is dropped from the journal with a warning. Returns how many.
 */
export function restoreGroups(
  records: readonly GroupRecord[],
  placer: Placer,
  holds: GroupHolds,
  journal: Journal,
  log: Logger,
  holdMs: number,
): { groups: number; dropped: number } {
  let groups = 0;
  let dropped = 0;
  for (const r of records) {
    try {
      const grant = placer.restoreGroup(r);
      const kept = Buffer.from(r.tokenHash, 'base64');
      // a SHA-256, or (no token was journaled yet) random bytes no token matches: it only keeps its machines
      holds.hold(grant, kept.length === 32 ? kept : randomBytes(32), holdMs);
      groups++;
    } catch (err) {
      dropped++;
      journal.groupGone(r.groupId);
      log.warn({ groupId: r.groupId, reason: (err as Error).message }, 'journaled group dropped');
    }
  }
  return { groups, dropped };
}
