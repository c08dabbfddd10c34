/**
 * The end-of-batch summary (SPEC D7): a table with one row per job in file order, the count per
 * status, a failure recap naming each failed job, its devices and its log file, and the log dir.
 */
import { table } from '../format/table.js';
import { JOB_STATUSES, type JobResult } from './job.js';
import { endText, secondsText, STATUS_WORD, whereText } from './reporter.js';

/** Counts of each status, e.g. `8 jobs: 7 passed, 1 failed`. Zero counts are left out. */
export function countsLine(results: readonly JobResult[]): string {
  const parts = JOB_STATUSES.map((s) => [s, results.filter((r) => r.status === s).length] as const)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`);
  return `${results.length} job${results.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

/** The whole summary text (ends with a newline). `wallMs` is the batch's wall time. */
export function summaryText(results: readonly JobResult[], logDir: string, wallMs: number): string {
  const rows = [['#', 'job', 'status', 'devices', 'time', 'end']];
  for (const r of results) {
    rows.push([
      String(r.index + 1),
      r.name,
      r.status,
      whereText(r.devices, r.machine).replace(/^devices /, ''),
      secondsText(r.durationMs),
      r.status === 'skipped' ? '-' : endText(r),
    ]);
  }
  const lines = ['', 'summary', table(rows), '', `${countsLine(results)} in ${secondsText(wallMs)}`];
  const bad = results.filter((r) => r.status !== 'passed' && r.status !== 'skipped');
  if (bad.length > 0) {
    lines.push('', 'failures:');
    for (const r of bad) {
      lines.push(
        `  ${STATUS_WORD[r.status]} ${r.name} (${whereText(r.devices, r.machine)}): ${endText(r)}; ` +
          `log ${r.logFile ?? 'none'}`,
      );
    }
  }
  lines.push(`logs: ${logDir}`);
  return `${lines.join('\n')}\n`;
}
