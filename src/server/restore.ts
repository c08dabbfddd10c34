/**
 * Restore on start (SPEC S4, S6; issue 19 items 4 and 7), before the port serves anything: the
 * state directory's lock is taken, the journal read back, the workers it knows put in the books as
 * not yet back for `--restart-hold`, the labels whose last worker left within `--reconnect-grace` as still coming
 * back for the rest of it, and the claims it holds taken back with exactly their
 * resources, each awaiting its holder for `--claim-hold` (ClaimHolds: resumable with its resume token) and
 * released when that runs out. The calls in flight on a journaled worker are held with it for the restart hold
 * (WorkerHub.restoreWorker): the same agent instance re-binds them when it re-attaches, and their callers follow
 * them again by call id (SPEC S3); the claim a Run placed for its call lasts as long as the call. Groups come back
 * whole, awaiting their holder the same way (group-holds.ts, rule G7).
 */
import { BerthError } from '../errors.js';
import type { ServeOptions } from '../config/serve-options.js';
import { Journal } from '../journal/journal.js';
import { SYNC_EVERY_MS } from '../journal/disk-sync.js';
import { LmdbStore } from '../journal/lmdb-store.js';
import { endingOfRecord, eventsOfRecord } from '../journal/ending.js';
import { entryOfRecord, type EndedRecord, type JournalState } from '../journal/records.js';
import type { History } from '../journal/history.js';
import type { Store, StoreError } from '../journal/store.js';
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import { StateDirLock } from '../provision/state-lock.js';
import { randomBytes } from 'node:crypto';
import type { Grant } from '../placement/types.js';
import type { CallRecord } from '../workers/call-record.js';
import type { WorkerHub } from '../workers/hub.js';
import type { ClaimHolds } from './claim-holds.js';
import { callerHold } from './call-follow.js';
import { restoreGroups, type GroupHolds } from './group-holds.js';

/** What start-up restored, for the log line and tests. */
export interface Restored {
  journal: Journal;
  lock?: StateDirLock;
  workers: number;
  /** The names of the workers restored as not yet back. */
  workerNames: string[];
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
 * Opens the journal of `options.stateDir` (or `store`, for another Store) and restores `placer` from it, and
 * `history` (SPEC S9) from its ended calls and claims; `onCommit(ms, records)` observes each commit (metrics);
 * `groupHolds` keeps the restored groups for their holders (without it, groups are not restored).
 * @throws Error naming the directory when another live server holds it or it cannot be written;
 *   StoreError naming the journal when it is corrupt or unreadable.
 */
export async function restoreFromJournal(
  options: ServeOptions,
  placer: Placer,
  holds: ClaimHolds,
  log: Logger,
  store?: Store,
  hub?: WorkerHub,
  history?: History,
  onCommit?: (ms: number, records: number) => void,
  groupHolds?: GroupHolds,
): Promise<Restored> {
  const start = performance.now();
  const lock = store ? undefined : StateDirLock.acquire(options.stateDir, options.listen);
  let opened: { journal: Journal; state: JournalState };
  try {
    const onError = (err: StoreError) => log.error({ reason: err.message }, 'journal write failed');
    opened = await Journal.open(store ?? LmdbStore.open(options.stateDir, SYNC_EVERY_MS, onError), {
      retentionMs: options.historyRetention * 1000,
      maxHistory: options.historyMax,
      onError,
      onCommit,
    });
  } catch (err) {
    lock?.release();
    throw err;
  }
  const { journal, state } = opened;
  history?.load([...state.ended, ...state.released].map(entryOfRecord)); // finished work survives too (SPEC S9)
  // Calls that ended before the restart stay followable by id: their ending and newest events (SPEC S3, issue 19).
  const keptFor = options.historyRetention * 1000; // as long as the journal keeps the record
  for (const e of state.ended) hub?.restoreEnded(e, endingOfRecord(e), e.endedAt + keptFor, eventsOfRecord(e));
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
  for (const l of state.labels) {
    if (l.goneAt + options.reconnectGrace * 1000 > now) placer.restoreLabel(l.label, l.goneAt);
    else journal.labelGone(l.label);
  }
  const timers: NodeJS.Timeout[] = [];
  let claims = 0;
  let dropped = 0;
  const grants = new Map<string, Grant>();
  for (const c of state.claims) {
    try {
      const grant = placer.restoreClaim(c);
      grants.set(c.claimId, grant);
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
  // Groups held at the crash come back whole, each awaiting its holder for --claim-hold (rule G7).
  const regrouped = groupHolds
    ? restoreGroups(state.groups, placer, groupHolds, journal, log, options.claimHold * 1000)
    : { groups: 0, dropped: 0 };
  // Calls in flight at the crash: held with their worker for the restart hold, re-bound when the same agent
  // instance re-attaches listing them. Those that cannot be (the engine host's died with the server; a worker or
  // claim the journal lost) end as lost, kept as ended so that the call id is not taken for a new execution.
  const holdMs = options.restartHold * 1000;
  const rebound = new Set<string>();
  const bind = (calls: Array<{ callId: string; runId: string; grant: Grant }>, recs: CallRecord[]) => {
    for (const [i, rec] of recs.entries()) {
      const claimId = calls[i].grant.claimId;
      rebound.add(rec.callId);
      // No Run handler sees a re-bound call end: its ending is journaled and put in the history here (SPEC S9), so
      // no later start restores it again and `berth history` lists it once it ends; as it ends, before any
      // follower tells its caller (SPEC S4).
      const journaled = state.calls.find((c) => c.callId === rec.callId);
      const startedAt = journaled?.at;
      // its Run's grace still holds (SPEC S3): a follower whose link breaks may follow it again within it
      if (journaled?.callerGraceMs) callerHold.set(rec, journaled.callerGraceMs);
      rec.whenEnded(() => {
        const ended = reboundEnding(rec, startedAt);
        journal.callEnded(ended);
        history?.add(entryOfRecord(ended));
        rec.endingKept = journal.flushed().catch(() => {}); // a failed write is logged by the journal
      });
      if (state.claims.find((c) => c.claimId === claimId)?.tokenHash) continue; // a Claim's: its holder resumes it
      holds.forget(claimId); // a Run's own claim: it lasts as long as its call (the Run is its holder)
      void rec.settled.then(() => placer.release(claimId, 'run ended'));
    }
  };
  const onMachine = (name: string) =>
    state.calls.flatMap((c) => {
      const grant = c.machine === name ? grants.get(c.claimId) : undefined;
      return grant ? [{ callId: c.callId, runId: c.runId, grant, startedAt: c.at }] : [];
    });
  for (const w of state.workers) {
    if (!hub || !w.agentId || !w.instanceId) continue;
    const calls = onMachine(w.name);
    if (!calls.length) continue;
    const spec = { name: w.name, labels: w.labels, inventory: w.inventory, remote: true, maxParallel: w.maxParallel };
    const agent = { agentId: w.agentId, instanceId: w.instanceId };
    bind(calls, hub.restoreWorker({ ...spec, version: w.version }, agent, calls, holdMs));
  }
  // The engine host's calls that ran in the engine keeper (issue 19 item 5) await its return the same way; the
  // rest of the engine host's (in-process, or without a keeper now) died with the server.
  if (hub) {
    const calls = onMachine(options.engineName);
    bind(calls, hub.restoreKeeperCalls(calls, holdMs));
  }
  const lost = state.calls.filter((c) => !rebound.has(c.callId));
  for (const c of lost) {
    const where =
      c.machine === options.engineName || !c.machine ? 'the engine host, which stopped with the server' : c.machine;
    hub?.restoreLost(
      c.callId,
      c.runId,
      c.machine,
      `call ${c.callId} was lost when the server restarted: it ran on ${where}`,
    );
  }
  if (lost.length) {
    const endLost = () => {
      for (const c of lost) {
        const ended = {
          callId: c.callId,
          runId: c.runId,
          machine: c.machine,
          outcome: 'lost',
          failureType: 'ServerRestarted',
          endedAt: Date.now(),
          startedAt: c.at,
          state: 'lost' as const,
          detail: `${c.callId}: lost with the server's restart (not re-bound within ${holdMs} ms)`,
        };
        journal.callEnded(ended);
        history?.add(entryOfRecord(ended));
      }
    };
    const t = setTimeout(endLost, holdMs);
    t.unref();
    timers.push(t);
  }
  const firstStart =
    state.workers.length +
      state.claims.length +
      state.calls.length +
      state.ended.length +
      state.labels.length +
      state.groups.length ===
    0;
  const ms = performance.now() - start;
  log.info(
    {
      journal: journal.store.where,
      workers: state.workers.length,
      claims,
      dropped,
      groups: regrouped.groups,
      droppedGroups: regrouped.dropped,
      calls: state.calls.length,
      ms: Math.round(ms),
    },
    firstStart ? 'journal empty: first start' : 'restored from the journal',
  );
  return {
    journal,
    lock,
    workers: state.workers.length,
    workerNames: state.workers.map((w) => w.name),
    claims,
    dropped,
    firstStart,
    ms,
    cancel: () => {
      for (const t of timers) clearTimeout(t);
    },
  };
}

/** The ended record of a call re-bound after a restart, as it ends (`startedAt`: when it first started). */
function reboundEnding(rec: CallRecord, startedAt: number | undefined): EndedRecord {
  const end = rec.ending;
  const error = end instanceof BerthError ? end : undefined;
  const failure = end && !(end instanceof BerthError) && end.$case === 'failure' ? end.value : undefined;
  const failureType = error ? error.kind : failure?.type;
  const outcome = rec.outcome || 'error';
  const state = outcome === 'result' ? 'succeeded' : error?.kind === 'cancelled' ? 'cancelled' : 'failed';
  return {
    callId: rec.callId,
    runId: rec.runId,
    machine: rec.machine,
    outcome,
    failureType: failureType ?? (outcome === 'error' ? 'WorkerLost' : undefined),
    endedAt: Date.now(),
    startedAt,
    node: rec.callId.slice(rec.callId.indexOf(':') + 1),
    state,
    detail: error ? error.message : `${rec.callId} finished${failureType ? `: ${failureType}` : ''}`,
  };
}
