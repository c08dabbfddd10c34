/**
 * Reporter: what a person watching `berth dispatch` sees (SPEC D5, D7). Without a terminal, one
 * line per event: START (name, pid when known, devices) and PASS / FAIL / TIMEOUT / CANCELLED / ERROR
 * (name, exit code or signal, devices, duration), a failed job's recent output grouped after its
 * line. On a terminal, START and PASS lines give way to a live progress bar (done / running /
 * queued / failed) redrawn in place; failures still print in full above it.
 */
import { formatRange } from '../resources/ranges.js';
import type { OutputCapture } from './capture.js';
import type { Job, JobResult, JobStatus, StartInfo } from './job.js';

/** Receives batch events; every method is synchronous and cheap. */
export interface Reporter {
  /** A job runs: its pid (embedded) or machine (`--server`) and its devices are known. */
  started(job: Job, info: StartInfo): void;
  /** A job has its one result (skipped jobs too). */
  finished(result: JobResult, job: Job): void;
  /** A job is being stopped for a timeout: show what it printed last. */
  stuck(job: Job, info: StartInfo, capture: OutputCapture): void;
  /** Something about the whole batch (fail-fast, interrupted, batch timeout). */
  notice(text: string): void;
  /** Queue and in-flight counts after jobs were started. */
  progress(counts: { queued: number; running: number }): void;
  /** Clears any progress bar; call before printing the summary. */
  end(): void;
}

/** The word that starts a job's end line, per status. */
export const STATUS_WORD: Record<JobStatus, string> = {
  passed: 'PASS',
  failed: 'FAIL',
  timed_out: 'TIMEOUT',
  cancelled: 'CANCELLED',
  skipped: 'SKIPPED',
  spawn_error: 'ERROR',
  error: 'ERROR',
};

/** `devices 0-3`, `devices none`, plus the machine when a server placed the job. */
export function whereText(devices: readonly number[], machine?: string): string {
  const d = `devices ${devices.length === 0 ? 'none' : formatRange(devices)}`;
  return machine === undefined ? d : `${d} on ${machine}`;
}

/** `exit 1`, `signal SIGKILL`, the spawn error, or `not run`. */
export function endText(r: JobResult): string {
  if (r.error !== undefined) return r.error;
  if (r.signal !== null) return `signal ${r.signal}`;
  return r.exitCode === null ? 'not run' : `exit ${r.exitCode}`;
}

/** Seconds with two decimals, e.g. `1.25s`. */
export function secondsText(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}

/** Prints batch events to `out`; `tty` selects the progress bar. */
export class ConsoleReporter implements Reporter {
  /** Jobs whose recent output was shown when they were stopped (not repeated at their end). */
  readonly #shownStuck = new Set<number>();
  #done = 0;
  #failed = 0;
  #counts: { queued: number; running: number };
  #barShown = false;
  #lastBar = '';

  /** @param total jobs in the batch; @param tailLines lines of output shown per failed or stuck job. */
  constructor(
    readonly out: NodeJS.WritableStream,
    readonly tty: boolean,
    readonly total: number,
    readonly tailLines = 50,
  ) {
    this.#counts = { queued: total, running: 0 };
  }

  #print(text: string): void {
    if (this.#barShown) this.out.write('\r\x1b[2K');
    this.out.write(text.endsWith('\n') ? text : `${text}\n`);
    this.#barShown = false;
    this.#bar();
  }

  #bar(): void {
    if (!this.tty) return;
    const width = 24;
    const filled = this.total === 0 ? width : Math.round((this.#done / this.total) * width);
    const c = this.#counts;
    const bar =
      `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.#done}/${this.total} ` +
      `done  ${c.running} running  ${c.queued} queued  ${this.#failed} failed`;
    if (this.#barShown && bar === this.#lastBar) return;
    this.out.write(`\r\x1b[2K${bar}`);
    this.#lastBar = bar;
    this.#barShown = true;
  }

  #output(title: string, shown: { text: string; truncated: boolean }, logFile?: string): string {
    const notes = [
      shown.truncated ? `last ${this.tailLines} lines at most` : '',
      logFile ? `full log ${logFile}` : '',
    ].filter(Boolean);
    const head = `----- ${title}${notes.length > 0 ? ` (${notes.join('; ')})` : ''} -----`;
    return `${head}\n${shown.text === '' ? '(no output)' : shown.text}\n-----`;
  }

  started(job: Job, info: StartInfo): void {
    if (this.tty) return this.#bar();
    // A berth worker reports no pid: the line then names the machine and devices only.
    const pid = info.pid !== undefined ? `  pid ${info.pid}` : '';
    this.#print(`START     ${job.name}${pid}  ${whereText(info.devices, info.machine)}`);
  }

  finished(r: JobResult, _job: Job): void {
    this.#done++;
    if (r.status !== 'skipped' && this.#counts.running > 0)
      this.#counts = { ...this.#counts, running: this.#counts.running - 1 };
    if (r.status === 'skipped' || (r.status === 'passed' && this.tty)) return this.#bar();
    if (r.status !== 'passed') this.#failed++;
    let text =
      `${STATUS_WORD[r.status].padEnd(9)} ` +
      `${r.name}  ${endText(r)}  ${whereText(r.devices, r.machine)}  ${secondsText(r.durationMs)}`;
    if (this.#shownStuck.delete(r.index)) {
      text += `\n(output up to the stop shown above${r.logFile ? `; full log ${r.logFile}` : ''})`;
    } else if (r.status !== 'passed' && r.status !== 'spawn_error' && !(r.status === 'error' && r.tail === '')) {
      const lines = r.tail.replace(/\n$/, '').split('\n');
      const shown = { text: lines.slice(-this.tailLines).join('\n'), truncated: lines.length > this.tailLines };
      text += `\n${this.#output(`output of ${r.name}`, shown, r.logFile)}`;
    }
    this.#print(text);
  }

  stuck(job: Job, info: StartInfo, capture: OutputCapture): void {
    this.#shownStuck.add(job.index);
    const shown = capture.lastLines(this.tailLines);
    this.#print(
      `STUCK     ${job.name}  past its timeout  ${whereText(info.devices, info.machine)}; stopping it\n` +
        `${this.#output(`recent output of ${job.name}`, shown, capture.logFile)}`,
    );
  }

  notice(text: string): void {
    this.#print(`berth dispatch: ${text}`);
  }

  progress(counts: { queued: number; running: number }): void {
    this.#counts = counts;
    this.#bar();
  }

  end(): void {
    if (this.#barShown) this.out.write('\n');
    this.#barShown = false;
  }
}
