/**
 * Entry point of `berth dispatch`'s input checker (built to dist/dispatch-check.js; checked-input.ts
 * starts it): reads a CheckRequest as JSON on stdin, validates the flags and the batch file with
 * zod, and writes one CheckReply as JSON on stdout — the options and jobs, or the error (its name
 * and message) that refuses them. Exits 0 either way; any other ending is a crash.
 */
import { resolveDispatchOptions } from '../config/dispatch-options.js';
import { loadBatch } from './batch.js';
import type { CheckReply, CheckRequest } from './checked-input.js';

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  return Buffer.concat(chunks).toString('utf8');
}

/** The reply to `req`: options are checked first, then the batch, as `berth dispatch` always did. */
async function check(req: CheckRequest): Promise<CheckReply> {
  try {
    const options = resolveDispatchOptions(req.flags);
    return { options, jobs: await loadBatch(req.file) };
  } catch (e) {
    if (e instanceof Error) return { error: { name: e.name, message: e.message } };
    return { error: { name: 'Error', message: String(e) } };
  }
}

const reply = await check(JSON.parse(await readAll(process.stdin)) as CheckRequest);
process.stdout.write(JSON.stringify(reply)); // a pipe: written before exit
