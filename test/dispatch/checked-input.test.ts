/**
 * The check of `berth dispatch`'s input on a worker thread (src/dispatch/checked-input.ts, run from
 * the build in dist/ as the CLI runs it): the same jobs and options as checking in-process, the same
 * errors (classes included, for the CLI's exit 2), and a clear error, never a hang, when the
 * thread cannot answer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveDispatchOptions } from '../../src/config/dispatch-options.js';
import { OptionsError } from '../../src/config/options-error.js';
import { BatchError } from '../../src/dispatch/batch-error.js';
import { loadBatch } from '../../src/dispatch/batch.js';
import { checkInput } from '../../src/dispatch/checked-input.js';
import { scratch, type Scratch } from './support.js';

let s: Scratch | undefined;
afterEach(() => s?.cleanup());

describe("dispatch's input is checked on a worker thread", () => {
  it('gives the jobs and options checking in-process gives', async () => {
    s = scratch();
    const file = s.batch([{ label: 'a', devices: 2, argv: ['echo', '{devices}'], env: { N: 1 }, timeout: 1.5 }]);
    const flags = { devices: '0-3', jobs: '2', backfill: true };
    const r = await checkInput(file, flags);
    expect(r.jobs).toEqual(await loadBatch(file));
    expect(r.options).toEqual(resolveDispatchOptions(flags));
  });

  it('refuses bad flags and bad batches with the errors the CLI exits 2 on', async () => {
    s = scratch();
    const good = s.batch([{ argv: ['true'] }]);
    await expect(checkInput(good, { jobs: '0' })).rejects.toThrow(OptionsError);
    await expect(checkInput(good, { jobs: '0' })).rejects.toThrow(/-j\/--jobs: must be at least 1/);
    const bad = s.batch([{ label: 'neg', devices: -1, argv: ['true'] }]);
    await expect(checkInput(bad, {})).rejects.toThrow(BatchError);
    await expect(checkInput(bad, {})).rejects.toThrow(/job 1 \("neg"\): devices: must be at least 0/);
  });

  it('a thread that cannot start, or ends without an answer, is a clear error', async () => {
    s = scratch();
    const file = s.batch([{ argv: ['true'] }]);
    await expect(checkInput(file, {}, join(s.dir, 'missing.js'))).rejects.toThrow(/^cannot check the batch: /);
    const quits = join(s.dir, 'quits.mjs');
    writeFileSync(quits, 'process.exit(3);\n');
    await expect(checkInput(file, {}, quits)).rejects.toThrow(
      /cannot check the batch: its thread exited 3 without an answer; no job was started/,
    );
    const throws = join(s.dir, 'throws.mjs');
    writeFileSync(throws, "throw new Error('boom');\n");
    await expect(checkInput(file, {}, throws)).rejects.toThrow(/cannot check the batch: boom; no job was started/);
  });
});
