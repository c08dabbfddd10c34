/**
 * `berth dispatch`'s input, checked in a short-lived process of its own (dist/dispatch-check.js,
 * built from check-main.ts): the flags and the batch file are validated there with zod (and the
 * YAML parser, for YAML batches), before any job starts (SPEC R1, D2), and only the plain result
 * comes back. The process that starts the jobs never loads either: every job is a fork of it, and
 * a fork costs more the more memory the parent holds (issue 11: zod and yaml made dispatch's
 * spawns ~1.4× a bare Node loop's).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BERTH_ROOT } from '../berth-bin.js';
import type { DispatchOptions } from '../config/dispatch-options.js';
import { OptionsError } from '../config/options-error.js';
import { BatchError } from './batch-error.js';
import type { Job } from './job.js';

/** The checker's entry point (bin/build.mjs builds it next to dist/main.js). */
export const CHECKER = join(BERTH_ROOT, 'dist', 'dispatch-check.js');

/** What the checker is asked: the batch file (as given, relative to the working directory) and commander's flags. */
export interface CheckRequest {
  file: string;
  flags: Record<string, unknown>;
}

/** The validated options and jobs. */
export interface CheckedInput {
  options: DispatchOptions;
  jobs: Job[];
}

/** The checker's one reply on stdout: the checked input, or the error that refused it. */
export type CheckReply = CheckedInput | { error: { name: string; message: string } };

/** The error the checker reported, as the class the CLI recognises (OptionsError and BatchError exit 2). */
function rebuilt(e: { name: string; message: string }): Error {
  if (e.name === 'OptionsError') return new OptionsError(e.message);
  if (e.name === 'BatchError') return new BatchError(e.message);
  return Object.assign(new Error(e.message), { name: e.name }); // e.g. RangeSpecError (exit 2), else exit 1
}

/**
 * Validates `flags` (resolveDispatchOptions) and the batch `file` (loadBatch) in the checker process.
 * @throws OptionsError / BatchError as those would; Error when the checker cannot run or dies
 * (naming how it ended and the last of its stderr).
 */
export function checkInput(file: string, flags: Record<string, unknown>): Promise<CheckedInput> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHECKER], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2000)));
    child.stdin.on('error', () => {}); // a checker that died early: told by 'close'
    child.once('error', (e) => reject(new Error(`cannot check the batch: cannot start ${CHECKER}: ${e.message}`)));
    child.once('close', (code, signal) => {
      let reply: CheckReply | undefined;
      try {
        reply = code === 0 ? (JSON.parse(Buffer.concat(out).toString('utf8')) as CheckReply) : undefined;
      } catch {
        reply = undefined;
      }
      if (reply === undefined) {
        const how = signal !== null ? `was killed by ${signal}` : `exited ${code} without an answer`;
        const why = err.trim() === '' ? '' : `: ${err.trim().split('\n').slice(-3).join(' | ')}`;
        reject(new Error(`cannot check the batch: the checker (${CHECKER}) ${how}${why}; no job was started`));
      } else if ('error' in reply) reject(rebuilt(reply.error));
      else resolve(reply);
    });
    child.stdin.end(JSON.stringify({ file, flags } satisfies CheckRequest));
  });
}
