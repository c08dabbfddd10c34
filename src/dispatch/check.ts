/**
 * The check of `berth dispatch`'s input (SPEC R1): flags with zod (resolveDispatchOptions), then the
 * batch file (loadBatch), as one request and one reply, plain data either way: it runs on a worker
 * thread of its own (check-worker.ts, started by checked-input.ts).
 */
import { resolveDispatchOptions } from '../config/dispatch-options.js';
import { loadBatch } from './batch.js';
import type { CheckReply, CheckRequest } from './checked-input.js';

/** The reply to `req`: options are checked first, then the batch, as `berth dispatch` always did. */
export async function checkRequest(req: CheckRequest): Promise<CheckReply> {
  try {
    const options = resolveDispatchOptions(req.flags);
    return { options, jobs: await loadBatch(req.file) };
  } catch (e) {
    if (e instanceof Error) return { error: { name: e.name, message: e.message } };
    return { error: { name: 'Error', message: String(e) } };
  }
}
