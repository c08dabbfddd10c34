/**
 * The journal (issue 19 item 4, SPEC S4): berth's durable records on a Store, written by group
 * commit (group-commit.ts). Changes are queued synchronously (never awaited by the placer: the journal is off the
 * placement hot path); a batch is written while what queues meanwhile goes in the next one, so many claims share
 * one commit; batches are cut at the store's limits, the records of one change (a release and its history
 * record) always in one. A handler that acknowledges something awaits `flushed()` first: what the server
 * acknowledged is durable (Granted only after the grant's record). Within a batch the last change of a key wins.
 */
import { BerthError } from '../errors.js';
import { GroupCommit } from './group-commit.js';
import { DEFAULT_HISTORY_MAX } from './history.js';
import { StoreError, type Store, type StoreOp } from './store.js';
import {
  KEYS,
  parseRecords,
  type CallRecord,
  type ClaimRecord,
  type EndedRecord,
  type GroupRecord,
  type JournalState,
  type ReleasedRecord,
  type WorkerRecord,
} from './records.js';

/** Default time an ended call's or claim's record is kept (`--history-retention`): one day, in ms. */
export const DEFAULT_RETENTION_MS = 24 * 3600_000;

/**
 * Journal options: retention of ended calls and claims (ms) and most of them kept (SPEC S9), a commit observer
 * (latency in ms, records written).
 */
export interface JournalOptions {
  retentionMs?: number;
  maxHistory?: number;
  onCommit?: (ms: number, records: number) => void;
  onError?: (err: StoreError) => void;
}

/** berth's journal on one Store. Open with `Journal.open`. */
export class Journal {
  readonly #commits: GroupCommit;
  #closed = false;
  #frozenWorkers = false;
  readonly #claims = new Map<string, ClaimRecord>();
  readonly #groups = new Map<string, GroupRecord>();
  /** Claims whose record is over the store's per-write limit (never written) → why, until they go. */
  readonly #refused = new Map<string, StoreError>();
  /** The labels of each worker known, for the label records its leaving writes. */
  readonly #labels = new Map<string, string[]>();
  /** Ended calls' and claims' record keys → when they ended, oldest first (the history, SPEC S9). */
  readonly #ended = new Map<string, number>();
  readonly #retentionMs: number;
  readonly #maxHistory: number;
  #prune?: NodeJS.Timeout;

  private constructor(
    readonly store: Store,
    readonly opts: JournalOptions,
  ) {
    this.#retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#maxHistory = opts.maxHistory ?? DEFAULT_HISTORY_MAX;
    this.#commits = new GroupCommit(store, opts);
  }

  /**
   * Loads everything `store` holds and returns the journal with that state; ended calls and claims past the
   * retention or the count cap are dropped (written at the first commit).
   * @throws StoreError naming the store when it cannot be read or holds a record of the wrong shape.
   */
  static async open(store: Store, opts: JournalOptions = {}): Promise<{ journal: Journal; state: JournalState }> {
    let state: JournalState;
    try {
      state = parseRecords(await store.load());
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(store.where, `${(err as Error).message}; move it away to start empty`);
    }
    const j = new Journal(store, opts);
    const all = [
      ...state.ended.map((e) => [KEYS.ended(e.callId), e.endedAt] as const),
      ...state.released.map((r) => [KEYS.released(r.claimId), r.endedAt] as const),
    ].sort((a, b) => a[1] - b[1]);
    for (const [key, at] of all) j.#ended.set(key, at);
    j.#pruneEnded();
    state.ended = state.ended.filter((e) => j.#ended.has(KEYS.ended(e.callId)));
    state.released = state.released.filter((r) => j.#ended.has(KEYS.released(r.claimId)));
    for (const c of state.claims) j.#claims.set(c.claimId, c);
    for (const g of state.groups) j.#groups.set(g.groupId, g);
    for (const w of state.workers) j.#labels.set(w.name, w.labels);
    j.#prune = setInterval(() => j.#pruneEnded(), Math.min(j.#retentionMs, 60_000));
    j.#prune.unref();
    return { journal: j, state };
  }

  /**
   * Resolves once every change queued so far is durable; rejects with StoreError when its batch failed, or (given
   * `claimId`, a claim's or a group's id) when its record is over the store's per-write limit and was not written
   * (`tooLarge`).
   */
  flushed(claimId?: string): Promise<void> {
    const refused = claimId === undefined ? undefined : this.#refused.get(claimId);
    return refused ? Promise.reject(refused) : this.#commits.flushed();
  }

  /** A worker attached (or re-attached with a new spec): it is known across restarts until it leaves for good. */
  workerKnown(w: WorkerRecord): void {
    this.#labels.set(w.name, w.labels);
    this.#change({ key: KEYS.worker(w.name), value: w });
  }

  /**
   * A worker left for good (stopped, or its hold ran out): its record goes, and each of its labels is recorded
   * as left now, so that a restarted server still counts the label as coming back for the reconnect grace
   * (SPEC P3). Ignored after `freezeWorkers` (the server stopping).
   */
  workerGone(name: string): void {
    if (this.#frozenWorkers) return;
    const goneAt = Date.now();
    const labels = (this.#labels.get(name) ?? []).map((label) => ({
      key: KEYS.label(label),
      value: { label, goneAt },
    }));
    this.#labels.delete(name);
    this.#change(...labels, { key: KEYS.worker(name), delete: true });
  }

  /** A label's reconnect grace is over: its record goes. */
  labelGone(label: string): void {
    this.#change({ key: KEYS.label(label), delete: true });
  }

  /**
   * From now on workers leaving are not recorded: the server is stopping, which is not its workers
   * leaving (they come back after the restart).
   */
  freezeWorkers(): void {
    this.#frozenWorkers = true;
  }

  /** A claim was granted (or restored): its record with exactly its allocation. */
  claimHeld(c: ClaimRecord): void {
    this.#claims.set(c.claimId, c);
    const err = this.#change({ key: KEYS.claim(c.claimId), value: c });
    if (err) this.#refused.set(c.claimId, err);
    else this.#refused.delete(c.claimId);
  }

  /**
   * The holder of claim `claimId` may take it back after a broken stream (SPEC S3): the hash of its
   * resume token and its own hold in ms are added to its record. No-op for a claim not journaled.
   */
  claimHolder(claimId: string, tokenHash: string, holdMs: number): void {
    const c = this.#claims.get(claimId);
    if (c) this.claimHeld({ ...c, tokenHash, holdMs });
  }

  /**
   * The claim was released or lost: its record goes, and how it ended (`ended`, SPEC S9) is kept for the retention
   * period, in the same write. The record's delete is a no-op for a claim not journaled.
   */
  claimGone(claimId: string, ended?: ReleasedRecord): void {
    this.#refused.delete(claimId);
    const gone: StoreOp[] = this.#claims.delete(claimId) ? [{ key: KEYS.claim(claimId), delete: true }] : [];
    if (ended) this.#kept(KEYS.released(ended.claimId), ended.endedAt, ended, gone);
    else if (gone.length) this.#change(...gone);
  }

  /** True when claim `claimId` is journaled (held, or restored and awaiting its holder). */
  holds(claimId: string): boolean {
    return this.#claims.has(claimId);
  }

  /** The claim ids journaled now (held, or restored and awaiting their holder). */
  get claims(): number {
    return this.#claims.size;
  }

  /** A group was granted (or restored): one record with every member's allocation (rule G7). */
  groupHeld(g: GroupRecord): void {
    this.#groups.set(g.groupId, g);
    const err = this.#change({ key: KEYS.group(g.groupId), value: g });
    if (err) this.#refused.set(g.groupId, err);
    else this.#refused.delete(g.groupId);
  }

  /** The hash of group `groupId`'s resume token is added to its record (rule G7). No-op for a group not journaled. */
  groupHolder(groupId: string, tokenHash: string): void {
    const g = this.#groups.get(groupId);
    if (g) this.groupHeld({ ...g, tokenHash });
  }

  /** The group was released or lost: its record goes, every member with it. No-op for a group not journaled. */
  groupGone(groupId: string): void {
    this.#refused.delete(groupId);
    if (this.#groups.delete(groupId)) this.#change({ key: KEYS.group(groupId), delete: true });
  }

  /** True when group `groupId` is journaled (held, or restored and awaiting its holder). */
  holdsGroup(groupId: string): boolean {
    return this.#groups.has(groupId);
  }

  /** A call started. */
  callStarted(c: CallRecord): void {
    this.#change({ key: KEYS.call(c.callId), value: c });
  }

  /** A call ended: its in-flight record goes and how it ended is kept for the retention period, in one write. */
  callEnded(e: EndedRecord): void {
    this.#kept(KEYS.ended(e.callId), e.endedAt, e, [{ key: KEYS.call(e.callId), delete: true }]);
  }

  /** A claim ended (released or lost) that is not journaled: how, kept for the retention period (SPEC S9). */
  claimEnded(r: ReleasedRecord): void {
    this.#kept(KEYS.released(r.claimId), r.endedAt, r);
  }

  /** Puts history record `key` (with the ops `together`, in one write) and prunes the history past its cap. */
  #kept(key: string, endedAt: number, value: unknown, together: StoreOp[] = []): void {
    this.#ended.delete(key);
    this.#ended.set(key, endedAt);
    this.#change(...together, { key, value });
    if (this.#ended.size > this.#maxHistory) this.#pruneEnded();
  }

  /** Writes what is queued, then closes the store. Changes queued after this are dropped. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#prune);
    await this.flushed().catch(() => {});
    await this.store.close();
  }

  /** Queues one change (its ops in one write); a change over the store's limits is reported and dropped. */
  #change(...ops: StoreOp[]): StoreError | undefined {
    if (this.#closed) return undefined;
    const err = this.#commits.change(ops);
    if (err) this.opts.onError?.(err);
    return err;
  }

  /** Deletes the oldest ended records: those past the retention, and those past the count cap. */
  #pruneEnded(): void {
    const cut = Date.now() - this.#retentionMs;
    for (const [key, at] of this.#ended) {
      if (at >= cut && this.#ended.size <= this.#maxHistory) break;
      this.#ended.delete(key);
      this.#change({ key, delete: true });
    }
  }
}

/**
 * The error a handler answers when what it would acknowledge could not be journaled (SPEC S4): INVALID_ARGUMENT for
 * a claim too large to journal (the ask: its env or resources), UNAVAILABLE for a store that could not write.
 */
export function unjournaled(claimId: string, err: unknown): BerthError {
  const message = `claim ${claimId}: ${(err as Error).message}`;
  if (err instanceof StoreError && err.tooLarge)
    return new BerthError('invalid_argument', `ask: too large to journal (${message})`);
  return new BerthError('unavailable', message);
}
