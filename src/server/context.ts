/**
 * What every RPC handler is built from: the edge (log, token, drain signal) plus the domain
 * objects the server owns. Later layers add their services here.
 */
import type { ServeOptions } from '../config/serve-options.js';
import type { EventBus } from '../events.js';
import type { History } from '../journal/history.js';
import type { Journal } from '../journal/journal.js';
import type { Placer } from '../placement/placer.js';
import type { HostInventory } from '../resources/inventory.js';
import type { WorkerHub } from '../workers/hub.js';
import type { PreemptionNotice } from '../placement/preempt.js';
import type { ClaimHolds } from './claim-holds.js';
import type { GroupHolds } from './group-holds.js';
import type { EdgeContext } from './edge.js';
import type { ClusterInfo } from '../ha/cluster.js';

/** Shared by all handlers of one server. */
export interface ServerContext extends EdgeContext {
  /** Validated options. */
  options: ServeOptions;
  /** The engine host's inventory (detected, then overridden by flags). */
  engine: HostInventory;
  /** Placement and worker events (WatchEvents). */
  events: EventBus;
  /** The books of every machine and the claims on them. */
  placer: Placer;
  /** Resume tokens, and claims awaiting their holder after their stream broke (SPEC S3). */
  holds: ClaimHolds;
  /** Claim streams holding a lease, by claim id: each writes a Preempting notice to its holder (SPEC Q2). */
  preemptNotices: Map<string, (n: PreemptionNotice) => void>;
  /** Groups restored after a restart, awaiting their holder (rule G7). */
  groupHolds: GroupHolds;
  /** Attached workers and calls in flight. */
  hub: WorkerHub;
  /**
   * The journal (SPEC S4), from `start()` on: a handler awaits `journal.flushed()` before it
   * acknowledges what the placer did (Granted, Released, a call sent to a worker).
   */
  journal?: Journal;
  /**
   * Finished calls and ended claims (SPEC S9; the History RPC), fed from the events; loaded from the journal at
   * start, in memory only for the process's life with `--journal off`.
   */
  history: History;
  /** Metrics, when `--metrics-listen` is given: handlers report how long each placement decision took (ms). */
  metrics?: { decided(ms: number): void };
  /**
   * Drains the server and stops it (SPEC R3; the Drain RPC): resolves once the drain is over, before the port closes,
   * with how many kept calls finished within the grace and how many its end cancelled. Grace in ms.
   */
  drain?: (graceMs: number) => Promise<{ finished: number; cancelled: number }>;
  /** The grace of the drain under way, in ms (sent to workers in Drain); unset before a drain. */
  drainGraceMs?: number;
  /** The leader's epoch while this server leads a cluster (SPEC S7), sent on every frame to workers; 0 without one. */
  epoch?: number;
  /**
   * A clustered server (SPEC S7): true while it leads and its renew deadline has not passed. Once false no frame is
   * sent to a worker (a deposed leader's decisions cannot reach one). Unset with the embedded store.
   */
  acting?: () => boolean;
  /** A clustered server's standing for GetSnapshot (SPEC S7); unset with the embedded store. */
  cluster?: () => ClusterInfo;
}
