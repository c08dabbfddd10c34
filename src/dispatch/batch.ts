/**
 * Batch files (SPEC D1): YAML or JSON, either `{ jobs: [...] }` or a bare list of jobs. Each job:
 * `label`, `devices` (count ≥ 0), `argv` (list, may hold `{devices}`) or `shell` (run by `sh -c`),
 * optional `cwd` (relative to the batch file's directory), `env`, `timeout` (s) and
 * `stack_dump_signal` (SIGUSR1 before a timeout stop). Labels are unique and free of control
 * characters (they name log files, JUnit testcases and output lines); the default is `job<N>`.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as z from 'zod';
import { valueAt } from '../errors.js';
import { BatchError } from './batch-error.js';
import type { Job } from './job.js';

export { BatchError };

const envValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/** Most devices one job may ask for (one more than the highest device id a range may name). */
export const MAX_JOB_DEVICES = 65536;
/** Longest timeout in seconds (Node timers hold at most 2^31 − 1 ms). */
export const MAX_TIMEOUT_S = 2_147_483;

const jobSchema = z.strictObject({
  label: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'must not hold control characters (newline, tab, escape…)')
    .optional(),
  devices: z
    .number()
    .max(MAX_JOB_DEVICES, `must be at most ${MAX_JOB_DEVICES}`)
    .int('expected a whole number')
    .min(0, 'must be at least 0')
    .default(0),
  argv: z
    .array(z.string().refine((v) => !v.includes('\0'), 'must not hold a NUL byte'))
    .min(1, 'must hold at least the program')
    .optional(),
  shell: z
    .string()
    .min(1, 'must not be empty')
    .refine((v) => !v.includes('\0'), 'must not hold a NUL byte')
    .optional(),
  cwd: z
    .string()
    .min(1, 'must not be empty')
    .refine((v) => !v.includes('\0'), 'must not hold a NUL byte')
    .optional(),
  env: z.record(z.string().regex(/^[^=\0]+$/, 'names hold no = or NUL'), envValue).default({}),
  timeout: z
    .number()
    .positive('must be more than 0 seconds')
    .max(MAX_TIMEOUT_S, `must be at most ${MAX_TIMEOUT_S} seconds`)
    .optional(),
  stack_dump_signal: z.boolean().default(false),
});

function jobName(i: number, raw: unknown): string {
  const label =
    raw !== null && typeof raw === 'object' && 'label' in raw ? (raw as { label: unknown }).label : undefined;
  return typeof label === 'string' && label.trim() !== ''
    ? `job ${i + 1} (${JSON.stringify(label.trim())})`
    : `job ${i + 1}`;
}

/**
 * Validates parsed batch data (a list of jobs or `{ jobs: [...] }`) into jobs in file order. A
 * relative `cwd` is resolved against `baseDir` (the batch file's directory).
 * @throws BatchError naming `source`, the job (1-based number and label), the field and the value;
 * for a label used twice, both jobs.
 */
export function parseBatch(data: unknown, source = 'batch', baseDir = process.cwd()): Job[] {
  let list: unknown;
  if (Array.isArray(data)) list = data;
  else if (data !== null && typeof data === 'object' && Object.keys(data).length === 1 && 'jobs' in data)
    list = data.jobs;
  else throw new BatchError(`${source}: expected a list of jobs or { jobs: [...] } with no other keys`);
  if (!Array.isArray(list))
    throw new BatchError(`${source}: jobs: expected a list of jobs (got ${JSON.stringify(list)})`);
  if (list.length === 0) throw new BatchError(`${source}: the batch holds no jobs`);
  const jobs = list.map((raw: unknown, i): Job => {
    const r = jobSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0];
      const field = issue.path.length > 0 ? issue.path.join('.') : '(job)';
      const got = valueAt(raw, issue.path);
      throw new BatchError(
        `${source}: ${jobName(i, raw)}: ${field}: ${issue.message} (got ${JSON.stringify(got) ?? 'nothing'})`,
      );
    }
    const j = r.data;
    if ((j.argv === undefined) === (j.shell === undefined)) {
      throw new BatchError(
        `${source}: ${jobName(i, raw)}: argv/shell: give exactly one of argv (a list) or shell (a string)`,
      );
    }
    return {
      index: i,
      label: j.label ?? `job${i + 1}`,
      devices: j.devices,
      argv: j.argv,
      shell: j.shell,
      cwd: j.cwd === undefined ? undefined : resolve(baseDir, j.cwd),
      env: j.env,
      timeoutMs: j.timeout === undefined ? undefined : Math.round(j.timeout * 1000),
      stackDumpSignal: j.stack_dump_signal,
    };
  });
  const byLabel = new Map<string, number>();
  for (const j of jobs) {
    const first = byLabel.get(j.label);
    if (first !== undefined) {
      throw new BatchError(
        `${source}: job ${j.index + 1} (${JSON.stringify(j.label)}): label: ` +
          `${JSON.stringify(j.label)} is already the label of job ${first + 1}; ` +
          `labels must be unique (log files and JUnit testcases are per label)`,
      );
    }
    byLabel.set(j.label, j.index);
  }
  return jobs;
}

/** `text` as JSON when it is JSON (parsed many times faster than by the YAML parser), else undefined. */
function jsonOrUndefined(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== '[' && first !== '{') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined; // YAML flow style, or broken: the YAML parser decides and explains
  }
}

/**
 * The YAML parser, loaded for YAML batches only (it is the biggest thing dispatch loads after zod).
 * yaml is CommonJS: loaded dynamically from the bundle its functions are on `default`.
 */
async function yamlParser(): Promise<(text: string) => unknown> {
  const m = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
  return (m.default ?? m).parse;
}

/**
 * Reads and validates a batch file (YAML, of which JSON is a subset); relative `cwd`s are taken
 * from the file's directory. Async only to load the YAML parser when the text is not JSON.
 * @throws BatchError when the file cannot be read, is not YAML/JSON, or a job is invalid.
 */
export async function loadBatch(file: string): Promise<Job[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new BatchError(`${file}: cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
  let data: unknown;
  try {
    data = jsonOrUndefined(text) ?? (await yamlParser())(text);
  } catch (e) {
    throw new BatchError(`${file}: not valid YAML or JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  return parseBatch(data, file, dirname(resolve(file)));
}
