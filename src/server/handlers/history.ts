/**
 * History RPC (SPEC S9, issue 19 item 9): finished calls and ended claims, newest first, filtered by run id, state,
 * machine, kind and the time they ended (ms since the Unix epoch), at most `limit` (0: 100; at most 10,000). Kept
 * for `--history-retention` and at most `--history-max`, from the journal (they survive a restart); with
 * `--journal off` only since the server started. Entries name no client and carry no secret (a claim id lets no one
 * run in an ended claim), so every authenticated client sees them all, as in GetSnapshot's calls.
 * Errors: INVALID_ARGUMENT naming the field (an unknown state or kind, since_ms after until_ms, a limit above
 * 10,000).
 */
import type { HistoryRequest, HistoryResponse } from '../../../generated/ts/berth/v1/history.js';
import { BerthError } from '../../errors.js';
import { HISTORY_STATES, type HistoryEntry } from '../../journal/history.js';
import type { ServerContext } from '../context.js';
import { unary } from '../edge.js';

/** Most entries one answer carries. */
export const MAX_HISTORY_LIMIT = 10_000;
/** Entries answered when the request names no limit. */
export const DEFAULT_HISTORY_LIMIT = 100;

/** Builds the History handler. */
export function historyHandler(ctx: ServerContext) {
  return unary<HistoryRequest, HistoryResponse>(ctx, 'History', (req) => {
    if (req.state && !(HISTORY_STATES as readonly string[]).includes(req.state)) {
      throw new BerthError(
        'invalid_argument',
        `state: expected one of ${HISTORY_STATES.join(', ')} (got ${JSON.stringify(req.state.slice(0, 100))})`,
      );
    }
    if (req.kind && req.kind !== 'call' && req.kind !== 'claim') {
      throw new BerthError(
        'invalid_argument',
        `kind: expected call or claim (got ${JSON.stringify(req.kind.slice(0, 100))})`,
      );
    }
    if (req.untilMs && req.sinceMs > req.untilMs) {
      throw new BerthError('invalid_argument', `since_ms: after until_ms (got ${req.sinceMs} > ${req.untilMs})`);
    }
    if (req.limit > MAX_HISTORY_LIMIT) {
      throw new BerthError('invalid_argument', `limit: at most ${MAX_HISTORY_LIMIT} (got ${req.limit})`);
    }
    const { entries, matched } = ctx.history.query({
      runId: req.runId || undefined,
      state: req.state || undefined,
      machine: req.machine || undefined,
      kind: req.kind || undefined,
      since: req.sinceMs || undefined,
      until: req.untilMs || undefined,
      limit: req.limit || DEFAULT_HISTORY_LIMIT,
    });
    return {
      entries: entries.map(toProto),
      matched,
      retentionMs: ctx.history.retentionMs,
      durable: ctx.journal !== undefined,
    };
  });
}

function toProto(e: HistoryEntry) {
  return {
    kind: e.kind,
    id: e.id,
    runId: e.runId,
    node: e.node,
    machine: e.machine,
    state: e.state,
    detail: e.detail,
    failureType: e.failureType,
    startedMs: e.startedAt,
    endedMs: e.endedAt,
    attempt: e.attempt,
    outcome: e.outcome,
  };
}
