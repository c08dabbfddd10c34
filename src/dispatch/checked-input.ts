/**
 * `berth dispatch`'s input, checked before any job starts (SPEC R1, D2): the flags and the batch
 * file are validated with zod (and the YAML parser, for YAML batches) by check.ts, on a worker
 * thread of its own (dist/dispatch-check.js, built from check-worker.ts) that ends once it has
 * answered. zod, yaml and the garbage of loading them live in that thread's heap, which goes with
 * it: the main thread never holds them. Every job is a fork of this process, and a fork costs more
 * the more memory the process holds (issue 11: with zod and yaml loaded here, 500 spawns took
 * ~1.4× a bare Node loop's; at the first spawn this process held 63 MB, now 45 MB).
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { BERTH_ROOT } from '../berth-bin.js';
import type { DispatchOptions } from '../config/dispatch-options.js';
import { OptionsError } from '../config/options-error.js';
import { BatchError } from './batch-error.js';
import type { Job } from './job.js';

/** The check's entry point (bin/build.mjs builds it next to dist/main.js). */
export const CHECKER = join(BERTH_ROOT, 'dist', 'dispatch-check.js');

/** What the check is asked: the batch file (as given, relative to the working directory) and commander's flags. */
export interface CheckRequest {
  file: string;
  flags: Record<string, unknown>;
}

/** The validated options and jobs. */
export interface CheckedInput {
  options: DispatchOptions;
  jobs: Job[];
}

/** The check's one reply: the checked input, or the error that refused it. */
export type CheckReply = CheckedInput | { error: { name: string; message: string } };

/** The error the check reported, as the class the CLI recognises (OptionsError and BatchError exit 2). */
function rebuilt(e: { name: string; message: string }): Error {
  if (e.name === 'OptionsError') return new OptionsError(e.message);
  if (e.name === 'BatchError') return new BatchError(e.message);
  return Object.assign(new Error(e.message), { name: e.name }); // e.g. RangeSpecError (exit 2), else exit 1
}

/**
 * Validates `flags` (resolveDispatchOptions) and the batch `file` (loadBatch) on a worker thread
 * running `entry`, and ends the thread.
 * @throws OptionsError / BatchError as those would; Error when the check cannot run or its thread
 * ends without an answer.
 */
export async function checkInput(file: string, flags: Record<string, unknown>, entry = CHECKER): Promise<CheckedInput> {
  const worker = new Worker(entry, { workerData: { file, flags } satisfies CheckRequest });
  let reply: CheckReply;
  try {
    reply = await new Promise<CheckReply>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', (e: Error) => reject(new Error(`cannot check the batch: ${e.message}; no job was started`)));
      worker.once('exit', (code) =>
        reject(new Error(`cannot check the batch: its thread exited ${code} without an answer; no job was started`)),
      );
    });
  } finally {
    await worker.terminate();
  }
  if ('error' in reply) throw rebuilt(reply.error);
  return reply;
}
