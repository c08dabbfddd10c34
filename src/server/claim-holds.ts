/**
 * Claims awaiting their holder (SPEC S3, issue 19 item 3). Every Granted carries a resume token
 * (128 random bits, base64url); the server keeps only its SHA-256. A claim whose ask has hold_ms > 0
 * is registered here while its Claim stream lives; when that stream ends without Release or
 * half-close (cancel, disconnect, error) the claim is not given back but awaits its holder for
 * hold_ms: the books, the GPU ids and the runs inside it stay. `ClaimRequest.resume` with the id
 * and the token takes it back (same Grant); when the hold runs out it is released ('hold ran out').
 * A claim without hold_ms never enters this module (SPEC P8 as before). An awaiting claim is kept
 * through the drain like a held lease (SPEC R3) and released 'server draining' when the grace ends.
 * Tokens are never logged nor put in events.
 */
import { timingSafeEqual } from 'node:crypto';
import { BerthError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { Placer } from '../placement/placer.js';
import type { PlacerSnapshot } from '../placement/snapshot.js';
import type { Grant } from '../placement/types.js';
import { CallScope, type LiveCalls } from './live-calls.js';
import { hashToken, newResumeToken } from './resume-tokens.js';

export { hashToken, newResumeToken } from './resume-tokens.js';

/** Longest claim id or token a Resume may name (ids are `c-<uuid>`, tokens 22 characters). */
const MAX_RESUME_FIELD = 256;

interface Awaiting {
  since: number;
  until: number;
  timer: NodeJS.Timeout;
  /** Kept through the drain (SPEC R3); aborted when the grace ends. */
  scope: CallScope;
  unlisten: () => void;
}

interface Entry {
  grant: Grant;
  hash: Buffer;
  holdMs: number;
  /** Set while the holder's stream is gone; absent while a live stream holds the claim. */
  awaiting?: Awaiting;
}

/** The claims with a hold, live or awaiting their holder, on one server. */
export class ClaimHolds {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly placer: Placer,
    private readonly events: EventBus,
    private readonly live: LiveCalls,
  ) {}

  /**
   * The resume token for a fresh `grant` (sent in Granted, never logged). A grant whose ask has
   * hold_ms > 0 is registered as held by its (live) stream; any other is not kept here.
   */
  issue(grant: Grant): string {
    const token = newResumeToken();
    const holdMs = grant.ask.holdMs ?? 0;
    if (holdMs > 0) this.#entries.set(grant.claimId, { grant, hash: hashToken(token), holdMs });
    return token;
  }

  /**
   * The holder's stream of claim `claimId` ended without Release (`why`: "stream ended", ...): a
   * registered claim the placer still holds now awaits its holder for its hold_ms. Returns false
   * when it does not (no hold, already lost): the caller gives it back as before.
   */
  letGo(claimId: string, why: string): boolean {
    const e = this.#entries.get(claimId);
    if (!e || e.awaiting) return false;
    if (e.holdMs <= 0 || this.placer.get(claimId) !== e.grant) {
      this.#entries.delete(claimId);
      return false;
    }
    this.#await(e, e.holdMs, why);
    return true;
  }

  /**
   * Registers `grant` as awaiting its holder for `holdMs` (> 0), resumable with the token whose
   * hashToken is `tokenHash`: for claims restored after a restart (the server's `--claim-hold`).
   */
  hold(grant: Grant, tokenHash: Buffer, holdMs: number): void {
    this.forget(grant.claimId);
    const e: Entry = { grant, hash: tokenHash, holdMs: grant.ask.holdMs ?? holdMs };
    this.#entries.set(grant.claimId, e);
    this.#await(e, holdMs, 'server restarted');
  }

  /**
   * Takes back an awaiting claim for a new stream of its holder: the same Grant (same allocation).
   * `owner`: the caller's identity when client identities are configured (SPEC R7).
   * @throws BerthError invalid_argument for an empty or oversized field; not_found, with one
   *   message, for an unknown id, a wrong token or another identity's claim (ids cannot be probed);
   *   failed_precondition "held by a live stream" when the token is right but the server still sees
   *   the old stream (it has not noticed the break yet: retry within the hold).
   */
  resume(claimId: string, token: string, owner: string | undefined): Grant {
    for (const [field, v] of [
      ['claim_id', claimId],
      ['resume_token', token],
    ] as const) {
      if (!v || v.length > MAX_RESUME_FIELD)
        throw new BerthError(
          'invalid_argument',
          `resume.${field}: ${v ? `at most ${MAX_RESUME_FIELD} characters (got ${v.length})` : 'required'}`,
        );
    }
    const e = this.#entries.get(claimId);
    const hash = hashToken(token);
    if (!e || !timingSafeEqual(e.hash, hash) || e.grant.ask.owner !== owner || this.placer.get(claimId) !== e.grant)
      throw new BerthError('not_found', `claim ${claimId}: no claim of that id and resume token awaits its holder`);
    const a = e.awaiting;
    if (!a)
      throw new BerthError(
        'failed_precondition',
        `claim ${claimId} is held by a live stream: the server has not seen its holder's old stream end yet`,
      );
    this.#settle(e);
    this.events.emit({
      kind: 'claim_resumed',
      claimId,
      machine: e.grant.machine,
      node: e.grant.ask.node,
      runId: e.grant.ask.runId,
      detail: `claim ${claimId} resumed by its holder after ${Date.now() - a.since} ms`,
      durationMs: Date.now() - a.since,
      gpuIds: e.grant.allocation.gpuIds,
    });
    return e.grant;
  }

  /** The claim's lease ended for good (Release, half-close, lost): forgets it. Idempotent. */
  forget(claimId: string): void {
    const e = this.#entries.get(claimId);
    if (!e) return;
    this.#settle(e);
    this.#entries.delete(claimId);
  }

  /** While claim `claimId` awaits its holder: ms left of its hold; otherwise undefined. */
  leftMs(claimId: string): number | undefined {
    const a = this.#entries.get(claimId)?.awaiting;
    return a && Math.max(0, a.until - Date.now());
  }

  /** Claims awaiting their holder now. */
  get awaitingCount(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.awaiting) n++;
    return n;
  }

  #await(e: Entry, holdMs: number, why: string): void {
    const { claimId } = e.grant;
    const now = Date.now();
    const timer = setTimeout(() => this.#end(e, 'hold ran out', false), holdMs);
    timer.unref();
    const scope = new CallScope(this.live, 'kept');
    scope.onAbort(() => this.#end(e, 'server draining', true)); // the drain's grace ended (SPEC R3)
    this.live.add(scope);
    // The machine left (SPEC W3): nothing to await any more. The engine host never leaves.
    const lost = () => this.forget(claimId);
    const signal = e.grant.remote ? e.grant.lost : undefined;
    signal?.addEventListener('abort', lost, { once: true });
    const unlisten = () => signal?.removeEventListener('abort', lost);
    e.awaiting = { since: now, until: now + holdMs, timer, scope, unlisten };
    this.events.emit({
      kind: 'claim_awaiting_holder',
      claimId,
      machine: e.grant.machine,
      node: e.grant.ask.node,
      runId: e.grant.ask.runId,
      detail: `claim ${claimId} awaits its holder for ${holdMs} ms (${why})`,
      durationMs: holdMs,
      gpuIds: e.grant.allocation.gpuIds,
    });
    if (signal?.aborted) this.forget(claimId);
  }

  /** Ends the awaiting state (resumed, forgotten): timer, drain scope, lost listener. */
  #settle(e: Entry): void {
    const a = e.awaiting;
    if (!a) return;
    e.awaiting = undefined;
    clearTimeout(a.timer);
    a.unlisten();
    a.scope.close();
  }

  #end(e: Entry, why: string, keepRuns: boolean): void {
    if (this.#entries.get(e.grant.claimId) !== e || !e.awaiting) return;
    this.forget(e.grant.claimId);
    this.placer.release(e.grant.claimId, why, { keepRuns });
  }
}

/** `s` with each held claim that awaits its holder marked with the ms left of its hold (GetSnapshot, the page). */
export function withHolds(s: PlacerSnapshot, holds: ClaimHolds): PlacerSnapshot {
  if (holds.awaitingCount === 0) return s;
  for (const h of s.held) h.holdLeftMs = holds.leftMs(h.claimId);
  return s;
}
