/**
 * `berth history`'s table (SPEC S9): one line per finished call or ended claim, newest first — ENDED (UTC, to the
 * second), KIND, STATE, ID, RUN, MACHINE, TOOK, DETAIL — and a closing line with how many matched and how long
 * the server keeps them.
 */
import type { HistoryEntry, HistoryResponse } from '../../generated/ts/berth/v1/history.js';
import { table } from '../format/table.js';

/** `ms` as a short duration: 850ms, 12.3s, 4m05s, 2h03m. */
export function shortDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function detailOf(e: HistoryEntry): string {
  const d = e.detail.length > 100 ? `${e.detail.slice(0, 99)}…` : e.detail;
  return e.kind === 'claim' && e.outcome && !d.includes(e.outcome) ? `${e.outcome}: ${d}` : d;
}

/** The table of `h`'s entries and the closing line. */
export function renderHistory(h: HistoryResponse): string {
  const rows = h.entries.map((e) => [
    new Date(e.endedMs).toISOString().slice(0, 19).replace('T', ' '),
    e.kind,
    e.state,
    e.id,
    e.runId,
    e.machine,
    shortDuration(Math.max(0, e.endedMs - e.startedMs)),
    detailOf(e).replace(/\s+/g, ' '),
  ]);
  const where = h.durable ? ', journaled' : ', in memory since the server started';
  const keep = `kept ${shortDuration(h.retentionMs)}${where}`;
  const foot = `${h.entries.length} of ${h.matched} matching (${keep})`;
  if (!rows.length) return `no finished calls or claims match\n${foot}`;
  return `${table([['ENDED (UTC)', 'KIND', 'STATE', 'ID', 'RUN', 'MACHINE', 'TOOK', 'DETAIL'], ...rows])}\n${foot}`;
}
