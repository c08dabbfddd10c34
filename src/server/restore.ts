/**
 * Restore on start (SPEC S4, S6; issue 19 items 4 and 7), before the port serves anything: the
 * state directory's lock is taken, the journal read back, the workers it knows put in the books as
 * not yet back for `--restart-hold`, and the claims it holds taken back with exactly their
 * resources, each awaiting its holder for `--claim-hold` (ClaimHolds: resumable with its resume token) and
 * released when that runs out.
 */
import type { ServeOptions } from '../config/serve-options.js';
import { Journal } from '../journal/journal.js';
import { LmdbStore } from '../journal/lmdb-store.js';
import type { JournalState } from '../journal/records.js';
import type { Store } from '../journal/store.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import { StateDirLock } from '../provision/state-lock.js';
import { randomBytes } from 'node:crypto';
import type { ClaimHolds } from './claim-holds.js';

/** What start-up restored, for the log line and tests. */
export interface Restored {
  journal: Journal;
  lock?: StateDirLock;
  workers: number;
  claims: number;
  /** Claims the journal held that could not be taken back (their machine or resources were gone). */
  dropped: number;
  /** An empty journal: a first start (no label is coming back, SPEC S6). */
  firstStart: boolean;
  ms: number;
  /** Cancels its timers (the calls journaled in flight end as lost after the restart hold; server stop). */
  cancel: () => void;
}

/**
 * Opens the journal of `options.stateDir` (or `store`, for another Store) and restores `placer` from it.
 * @throws Error naming the directory when another live server holds it or it cannot be written;
 *   StoreError naming the journal when it is corrupt or unreadable.
 */
export async function restoreFromJournal(
  options: ServeOptions,
  placer: Placer,
  holds: ClaimHolds,
  log: Logger,
  store?: Store,
): Promise<Restored> {
  const start = performance.now();
  const lock = store ? undefined : StateDirLock.acquire(options.stateDir, options.listen);
  let opened: { journal: Journal; state: JournalState };
  try {
    opened = await Journal.open(store ?? LmdbStore.open(options.stateDir), {
      onError: (err) => log.error({ reason: err.message }, 'journal write failed'),
    });
  } catch (err) {
    lock?.release();
    throw err;
  }
  const { journal, state } = opened;
  const now = Date.now();
  for (const w of state.workers) {
    const spec = { name: w.name, labels: w.labels, inventory: w.inventory, remote: true, maxParallel: w.maxParallel };
    try {
      placer.restoreMachine({ ...spec, version: w.version }, now + options.restartHold * 1000);
    } catch (err) {
      journal.workerGone(w.name); // e.g. it has the engine host's name now
      log.warn({ worker: w.name, reason: (err as Error).message }, 'journaled worker dropped');
    }
  }
  const timers: NodeJS.Timeout[] = [];
  let claims = 0;
  let dropped = 0;
  for (const c of state.claims) {
    try {
      const grant = placer.restoreClaim(c);
      // Awaits its holder for --claim-hold: resumable with its token (a claim without one, e.g. a Run's, only
      // keeps its resources until then: no token hashes to random bytes), released 'hold ran out' after it.
      const kept = Buffer.from(c.tokenHash, 'base64');
      const hash = kept.length === 32 ? kept : randomBytes(32); // a SHA-256, or nothing any token matches
      holds.hold(grant, hash, options.claimHold * 1000);
      claims++;
    } catch (err) {
      dropped++;
      journal.claimGone(c.claimId);
      log.warn({ claimId: c.claimId, machine: c.machine, reason: (err as Error).message }, 'journaled claim dropped');
    }
  }
  // Calls in flight at the crash: nothing re-binds them yet, so once the restart hold is over they end as lost
  // (kept as ended for the retention period, so the call id is not taken for a new execution).
  // TODO(lead, h-server): re-bind them when their agent's Hello lists them (Welcome.calls) instead.
  if (state.calls.length) {
    const t = setTimeout(() => {
      for (const c of state.calls)
        journal.callEnded({
          callId: c.callId,
          runId: c.runId,
          machine: c.machine,
          outcome: 'lost',
          failureType: 'ServerRestarted',
          endedAt: Date.now(),
        });
    }, options.restartHold * 1000);
    t.unref();
    timers.push(t);
  }
  const firstStart = state.workers.length + state.claims.length + state.calls.length + state.ended.length === 0;
  const ms = performance.now() - start;
  log.info(
    {
      journal: journal.store.where,
      workers: state.workers.length,
      claims,
      dropped,
      calls: state.calls.length,
      ms: Math.round(ms),
    },
    firstStart ? 'journal empty: first start' : 'restored from the journal',
  );
  return {
    journal,
    lock,
    workers: state.workers.length,
    claims,
    dropped,
    firstStart,
    ms,
    cancel: () => {
      for (const t of timers) clearTimeout(t);
    },
  };
}
