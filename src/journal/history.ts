/**
 * History (SPEC S9, issue 19 item 9): finished calls and ended claims, kept for a retention period and at most a
 * count, newest last, for `berth history` and the History RPC — the way `sacct` or `ray job list` are used. Fed
 * from the event bus (`entryOf`); the journal keeps the same entries (records `ended/<call id>` and
 * `released/<claim id>`), so they are loaded back after a restart. Without a journal they last the process's life.
 * Times in ms since the Unix epoch.
 */
import type { BerthEvent } from '../events.js';

/** How work ended: calls succeeded / failed / cancelled / lost; claims released / lost. */
export const HISTORY_STATES = ['succeeded', 'failed', 'cancelled', 'lost', 'released'] as const;
/** One of HISTORY_STATES. */
export type HistoryState = (typeof HISTORY_STATES)[number];

/** One finished call or ended claim. */
export interface HistoryEntry {
  kind: 'call' | 'claim';
  /** Call id (`#<k>` for a retry's attempt k) or claim id. */
  id: string;
  runId: string;
  node: string;
  machine: string;
  state: HistoryState;
  detail: string;
  /** A failed call's failure class, or its error kind ("unavailable", "deadline_exceeded"); '' otherwise. */
  failureType: string;
  /** How a claim was given back ("released", "half_closed", "hold_ran_out", …); '' for a call. */
  outcome: string;
  startedAt: number;
  endedAt: number;
  /** A call's attempt (SPEC S8), 1 or k for `#k`; 0 for a claim. */
  attempt: number;
}

/** What `query` matches; unset fields match all. */
export interface HistoryFilter {
  runId?: string;
  state?: string;
  machine?: string;
  kind?: string;
  since?: number;
  until?: number;
  /** Most entries returned, newest first. */
  limit: number;
}

/** Default `--history-max`: most entries kept. */
export const DEFAULT_HISTORY_MAX = 100_000;

/**
 * The history entry an event makes: call_finished / call_cancelled → a call; claim_released / claim_lost → a
 * claim, except a Run's own claim given back with its call (outcome run_ended: the call's entry says it all).
 * Undefined for other events.
 */
export function entryOf(e: BerthEvent): HistoryEntry | undefined {
  const base = {
    runId: e.runId ?? '',
    node: e.node ?? '',
    machine: e.machine ?? '',
    detail: e.detail,
    startedAt: e.timeMs - (e.durationMs ?? 0),
    endedAt: e.timeMs,
  };
  if ((e.kind === 'call_finished' || e.kind === 'call_cancelled') && e.callId) {
    const state: HistoryState =
      e.kind === 'call_cancelled' || e.failureType === 'cancelled'
        ? 'cancelled'
        : e.outcome === 'result'
          ? 'succeeded'
          : e.outcome === 'lost' || (e.failureType === 'unavailable' && / went away/.test(e.detail))
            ? 'lost'
            : 'failed';
    const m = /#(\d{1,2})$/.exec(e.callId);
    const attempt = m ? Number(m[1]) : 1;
    return { kind: 'call', id: e.callId, ...base, state, failureType: e.failureType ?? '', outcome: '', attempt };
  }
  if ((e.kind === 'claim_released' || e.kind === 'claim_lost') && e.claimId && e.outcome !== 'run_ended') {
    const state: HistoryState = e.kind === 'claim_lost' ? 'lost' : 'released';
    return { kind: 'claim', id: e.claimId, ...base, state, failureType: '', outcome: e.outcome ?? '', attempt: 0 };
  }
  return undefined;
}

/**
 * `entryOf` that also leaves out a Run's own claim when it is lost with its machine (claim_lost): it remembers the
 * claims call_started said a Run placed (`runClaim`) until they end. One per event stream.
 */
export function historyEntries(): (e: BerthEvent) => HistoryEntry | undefined {
  const runClaims = new Set<string>();
  return (e) => {
    if (e.kind === 'call_started' && e.runClaim && e.claimId) runClaims.add(e.claimId);
    if ((e.kind === 'claim_released' || e.kind === 'claim_lost') && e.claimId && runClaims.delete(e.claimId))
      return undefined;
    return entryOf(e);
  };
}

/** The entries kept, oldest first, pruned by age and count. */
export class History {
  /** By `<kind>/<id>`, in the order they ended (Map order). */
  readonly #entries = new Map<string, HistoryEntry>();

  /**
   * @param retentionMs how long an entry is kept after it ended
   * @param max most entries kept (the oldest go first)
   * @param onDrop told of each entry pruned (the journal deletes its record)
   */
  constructor(
    readonly retentionMs: number,
    readonly max = DEFAULT_HISTORY_MAX,
    readonly onDrop: (e: HistoryEntry) => void = () => {},
  ) {}

  /** How many entries are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** Keeps `e` (replacing an entry of the same kind and id), then prunes. */
  add(e: HistoryEntry): void {
    const key = `${e.kind}/${e.id}`;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    this.prune();
  }

  /** Loads entries read back from the journal, in the order they ended. */
  load(entries: Iterable<HistoryEntry>): void {
    for (const e of [...entries].sort((a, b) => a.endedAt - b.endedAt)) this.#entries.set(`${e.kind}/${e.id}`, e);
    this.prune();
  }

  /** Drops entries older than the retention, and the oldest past the count cap. */
  prune(now = Date.now()): void {
    for (const [key, e] of this.#entries) {
      if (this.#entries.size <= this.max && now - e.endedAt <= this.retentionMs) break;
      this.#entries.delete(key);
      this.onDrop(e);
    }
  }

  /** The entries matching `f`, newest first, at most `f.limit`; `matched` counts them all. */
  query(f: HistoryFilter): { entries: HistoryEntry[]; matched: number } {
    this.prune();
    const out: HistoryEntry[] = [];
    let matched = 0;
    const all = [...this.#entries.values()];
    for (let i = all.length - 1; i >= 0; i--) {
      const e = all[i];
      if (f.runId && e.runId !== f.runId) continue;
      if (f.state && e.state !== f.state) continue;
      if (f.machine && e.machine !== f.machine) continue;
      if (f.kind && e.kind !== f.kind) continue;
      if (f.since !== undefined && e.endedAt < f.since) continue;
      if (f.until !== undefined && e.endedAt > f.until) continue;
      matched++;
      if (out.length < f.limit) out.push(e);
    }
    return { entries: out, matched };
  }
}
