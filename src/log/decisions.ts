/**
 * Decision logs (issue 13): every placement and worker event from the event bus becomes one
 * structured pino line with the same fields as the event — grants, queues (with their reason),
 * clamps, fall-backs, releases, losses, abandons, attaches and detaches at info; calls and their
 * endings at debug. `watch_started` (a WatchEvents subscription) is not a decision: not logged.
 */
import type { BerthEvent, EventBus, EventKind } from '../events.js';
import type { Logger } from './logger.js';

/** The level each event kind is logged at. */
export const DECISION_LEVELS: Record<EventKind, 'info' | 'debug' | undefined> = {
  node_queued: 'info',
  node_placed: 'info',
  node_clamped: 'info',
  node_abandoned: 'info',
  claim_released: 'info',
  claim_lost: 'info',
  claim_awaiting_holder: 'info',
  claim_resumed: 'info',
  claim_preempted: 'info',
  worker_attached: 'info',
  worker_detached: 'info',
  worker_replaced: 'info',
  worker_disconnected: 'info',
  worker_reconnected: 'info',
  worker_hold_expired: 'info',
  server_draining: 'info',
  server_stopping: 'info',
  machine_started: 'info',
  machine_start_failed: 'info',
  machine_stopping: 'info',
  machine_lost: 'info',
  call_started: 'debug',
  call_finished: 'debug',
  call_cancelled: 'debug',
  call_retrying: 'info',
  group_queued: 'info',
  group_placed: 'info',
  group_released: 'info',
  group_lost: 'info',
  group_abandoned: 'info',
  group_awaiting_holder: 'info',
  group_resumed: 'info',
  watch_started: undefined,
};

/**
 * Logs every event of `events` on `log` until the returned function is called.
 * Each line: `{ event: kind, seq, machine, node, claimId, runId, callId, asked, granted, gpuIds,
 * fellBack, clamped, queued, label, outcome, failureType, durationMs, limiting }` (absent
 * fields omitted) with the event's `detail` as the message.
 */
export function logDecisions(events: EventBus, log: Logger): () => void {
  return events.subscribe((e: BerthEvent) => {
    const level = DECISION_LEVELS[e.kind];
    if (!level || !log.isLevelEnabled(level)) return;
    const { kind, detail, timeMs: _t, ...fields } = e;
    log[level]({ event: kind, ...fields }, detail);
  });
}
