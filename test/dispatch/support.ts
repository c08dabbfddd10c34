/**
 * Test support for `berth dispatch`: batch files in a temp dir, jobs that record their devices
 * and start/end times, and readers for the summary table and the per-job records.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { runBerth, type CliResult } from '../support/cli.js';

/** A scratch directory removed by `cleanup()`. */
export interface Scratch {
  dir: string;
  /** Writes `data` as a JSON batch file and returns its path. */
  batch(data: unknown, name?: string): string;
  cleanup(): void;
}

/** Makes a scratch directory. */
export function scratch(): Scratch {
  const dir = mkdtempSync(join(os.tmpdir(), 'berth-dispatch-test-'));
  return {
    dir,
    batch(data, name = 'batch.json') {
      const file = join(dir, name);
      writeFileSync(file, JSON.stringify(data, null, 2));
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A shell line that records `<label> start <epoch s> <{devices}> <$CUDA_VISIBLE_DEVICES>`, sleeps
 * `seconds`, then records `<label> end <epoch s>`, into `<dir>/<label>.rec`.
 */
export function recordingJob(
  dir: string,
  label: string,
  devices: number,
  seconds: number,
  extra: Record<string, unknown> = {},
) {
  const rec = join(dir, `${label}.rec`);
  return {
    name: label,
    devices,
    shell:
      `echo "start $(date +%s.%N) {devices} $CUDA_VISIBLE_DEVICES" > '${rec}'; sleep ${seconds}; ` +
      `echo "end $(date +%s.%N)" >> '${rec}'`,
    ...extra,
  };
}

/** One job's record: start and end in s since the epoch, the ids it saw in `{devices}` and the env. */
export interface JobRecord {
  label: string;
  start: number;
  end: number;
  devices: string;
  envDevices: string;
}

/** Reads the record written by `recordingJob`. */
export function readRecord(dir: string, label: string): JobRecord {
  const text = readFileSync(join(dir, `${label}.rec`), 'utf8');
  const s = /^start (\S+) (\S*) ?(\S*)$/m.exec(text);
  const e = /^end (\S+)$/m.exec(text);
  if (!s || !e) throw new Error(`incomplete record for ${label}: ${text}`);
  return { label, start: Number(s[1]), end: Number(e[1]), devices: s[2], envDevices: s[3] };
}

/** True when `<dir>/<label>.rec` exists (the job started). */
export function started(dir: string, label: string): boolean {
  return existsSync(join(dir, `${label}.rec`));
}

/** Statuses from the summary table, by label. */
export function statuses(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  const table = stdout.slice(stdout.indexOf('\nsummary\n'));
  for (const m of table.matchAll(/^\d+\s+(\S+)\s+(passed|failed|timed_out|cancelled|skipped|spawn_error|error)\b/gm))
    out[m[1]] = m[2];
  return out;
}

/** Pids from the START lines, by label. */
export function pids(stdout: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of stdout.matchAll(/^START\s+(\S+)\s+pid (\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** Runs `berth dispatch FILE ...args`, with logs beside FILE unless `--log-dir` is given. */
export function dispatch(file: string, ...args: string[]): Promise<CliResult> {
  return runBerth(['dispatch', file, ...withLogDir(file, args)]);
}

/** `args` plus `--log-dir <dir of file>/logs` when they name no log dir (so tests leave nothing in /tmp). */
export function withLogDir(file: string, args: string[]): string[] {
  return args.includes('--log-dir') ? args : [...args, '--log-dir', join(dirname(file), 'logs')];
}
