/**
 * Batch files (SPEC D1): YAML or JSON, either `{ jobs: [...] }` or a bare list of jobs. Each job:
 * `name`, `devices` (count ≥ 0, or a share of one device in (0, 1): `0.5`), `resources` (named resources of berth's
 * machines and pools, `{trainer: 1}`, for `--server`), `argv` (list, may hold `{devices}`) or `shell` (run by `sh -c`),
 * optional `cwd` (relative to the batch file's directory), `env`, `timeout` (s),
 * `stack_dump_signal` (SIGUSR1 before a timeout stop), `retries` (0 to 10: placed again when its machine is lost,
 * for `--server`, SPEC S8), and `require` or `prefer` (a machine label, for `--server`). Names are unique and
 * free of control characters (they name log files, JUnit testcases and output lines); the default is `job<N>`.
 * `label:` is the old spelling of `name:` (accepted, with a note). Errors name the file, the line, the job
 * (`jobs[2]`, 0-based) and the key; an unknown key gets the known key it most likely meant (docs/dispatch.md).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as z from 'zod';
import { valueAt } from '../errors.js';
import { BatchError, jobRef } from './batch-error.js';
import type { Job } from './job.js';
import { closestKey } from './suggest.js';
import { NAME_RULE, QUANTITY_RULE, RESOURCE_NAME, toUnits, UNIT } from '../resources/quantity.js';

export { BatchError };

const envValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/** Most devices one job may ask for (one more than the highest device id a range may name). */
export const MAX_JOB_DEVICES = 65536;
/** What `devices:` may be: Ray's rule for GPUs (issue 23 item 6). */
export const DEVICES_RULE =
  'expected a whole number of devices, or a share of one device in (0, 1) in steps of 0.0001 (0.5 or 2, not 1.5)';
/** True for a share of one device: in (0, 1), a multiple of 0.0001. */
function isShare(v: number): boolean {
  const u = toUnits(v);
  return u !== undefined && u > 0 && u < UNIT;
}
/** Longest timeout in seconds (Node timers hold at most 2^31 − 1 ms). */
export const MAX_TIMEOUT_S = 2_147_483;

const jobName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'must not hold control characters (newline, tab, escape…)')
  .optional();
/** A machine label, by the rule of an ask's label (src/placement/ask.ts). */
const machineLabel = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'at most 63 characters')
  .regex(/^[A-Za-z0-9_.-]*$/, 'a machine label holds only letters, digits and _ . - (no spaces)')
  .optional();

const jobSchema = z.object({
  name: jobName,
  label: jobName, // the old spelling of name
  devices: z
    .number()
    .max(MAX_JOB_DEVICES, `must be at most ${MAX_JOB_DEVICES}`)
    .min(0, 'must be at least 0')
    .refine((v) => Number.isInteger(v) || isShare(v), DEVICES_RULE)
    .default(0),
  resources: z
    .record(
      z.string().regex(RESOURCE_NAME, NAME_RULE),
      z.number().refine((v) => toUnits(v) !== undefined, QUANTITY_RULE),
    )
    .optional(),
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
  retries: z
    .number()
    .int('expected a whole number')
    .min(0, 'must be at least 0')
    .max(10, 'must be at most 10')
    .default(0),
  require: machineLabel,
  prefer: machineLabel,
});

/** The keys a job may have, in the order the docs list them. */
export const JOB_KEYS: readonly string[] = Object.keys(jobSchema.shape).filter((k) => k !== 'label');

/** What an error calls job `i` before it is validated: `jobs[i]`, with its name when it has a usable one. */
function rawRef(i: number, raw: unknown): string {
  const o = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const name = typeof o.name === 'string' ? o.name : o.label;
  return typeof name === 'string' && name.trim() !== '' ? `jobs[${i}] (${JSON.stringify(name.trim())})` : `jobs[${i}]`;
}

/** How parseBatch reports beyond its errors. */
export interface ParseOptions {
  /** Receives one-line notes (the deprecated `label:`); default: none. */
  warn?: (note: string) => void;
  /** The 1-based line of a path into the list of jobs (`[2, 'shel']`), to name it in errors. */
  locate?: (path: readonly (string | number)[]) => number | undefined;
}

/**
 * Validates parsed batch data (a list of jobs or `{ jobs: [...] }`) into jobs in file order. A
 * relative `cwd` is resolved against `baseDir` (the batch file's directory).
 * @throws BatchError naming `source` (and the line, given `opts.locate`), the job (`jobs[i]` and its
 * name), the key and the value; for an unknown key the likely one; for a name used twice, both jobs.
 */
export function parseBatch(data: unknown, source = 'batch', baseDir = process.cwd(), opts: ParseOptions = {}): Job[] {
  let list: unknown;
  if (Array.isArray(data)) list = data;
  else if (data !== null && typeof data === 'object' && Object.keys(data).length === 1 && 'jobs' in data)
    list = data.jobs;
  else throw new BatchError(`${source}: expected a list of jobs or { jobs: [...] } with no other keys`);
  if (!Array.isArray(list))
    throw new BatchError(`${source}: jobs: expected a list of jobs (got ${JSON.stringify(list)})`);
  if (list.length === 0) throw new BatchError(`${source}: the batch holds no jobs`);
  const fail = (path: readonly (string | number)[], ref: string, text: string): BatchError => {
    const line = opts.locate?.(path);
    return new BatchError(`${source}${line === undefined ? '' : ` line ${line}`}: ${ref}: ${text}`, path);
  };
  let oldSpelling = 0;
  const jobs = list.map((raw: unknown, i): Job => {
    const ref = rawRef(i, raw);
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw fail([i], ref, `expected a job (a mapping of key: value) (got ${JSON.stringify(raw) ?? 'nothing'})`);
    for (const key of Object.keys(raw)) {
      if (key in jobSchema.shape) continue;
      const like = closestKey(key, JOB_KEYS);
      throw fail(
        [i, key],
        ref,
        `unknown key '${key}' (${like ? `did you mean '${like}'?` : `known keys: ${JOB_KEYS.join(', ')}`})`,
      );
    }
    const r = jobSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0];
      const field = issue.path.length > 0 ? issue.path.join('.') : '(job)';
      const got = valueAt(raw, issue.path);
      throw fail(
        [i, ...(issue.path as (string | number)[])],
        ref,
        `${field}: ${issue.message} (got ${JSON.stringify(got) ?? 'nothing'})`,
      );
    }
    const j = r.data;
    if (j.name !== undefined && j.label !== undefined)
      throw fail([i, 'label'], ref, 'name/label: give name only (label is its old spelling)');
    if (j.label !== undefined) oldSpelling++;
    if ((j.argv === undefined) === (j.shell === undefined))
      throw fail([i], ref, 'argv/shell: give exactly one of argv (a list) or shell (a string)');
    if (j.require !== undefined && j.prefer !== undefined)
      throw fail([i, 'prefer'], ref, 'require/prefer: give one machine label, required or preferred, not both');
    const name = j.name ?? j.label;
    return {
      index: i,
      name: name ?? `job${i + 1}`,
      devices: j.devices,
      ...(j.resources !== undefined && Object.keys(j.resources).length > 0 ? { resources: j.resources } : {}),
      argv: j.argv,
      shell: j.shell,
      cwd: j.cwd === undefined ? undefined : resolve(baseDir, j.cwd),
      env: j.env,
      timeoutMs: j.timeout === undefined ? undefined : Math.round(j.timeout * 1000),
      stackDumpSignal: j.stack_dump_signal,
      retries: j.retries,
      ...(j.require !== undefined ? { machine: { label: j.require, policy: 'require' as const } } : {}),
      ...(j.prefer !== undefined ? { machine: { label: j.prefer, policy: 'prefer' as const } } : {}),
    };
  });
  const byName = new Map<string, number>();
  for (const j of jobs) {
    const first = byName.get(j.name);
    if (first !== undefined) {
      throw fail(
        [j.index, 'name' in (list[j.index] as object) ? 'name' : 'label'],
        jobRef(j),
        `name: ${JSON.stringify(j.name)} is already the name of ${jobRef(jobs[first])}; ` +
          `names must be unique (log files and JUnit testcases are per name)`,
      );
    }
    byName.set(j.name, j.index);
  }
  if (oldSpelling > 0)
    opts.warn?.(
      `${source}: 'label:' is the old name of 'name:' (${oldSpelling} ${oldSpelling === 1 ? 'job' : 'jobs'}); ` +
        `write 'name:' (a label is a machine's in berth: 'require:'/'prefer:')`,
    );
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

type Yaml = typeof import('yaml');

/**
 * The YAML module, loaded for YAML batches and for errors only (it is the biggest thing dispatch loads
 * after zod). yaml is CommonJS: loaded dynamically from the bundle its functions are on `default`.
 */
async function yaml(): Promise<Yaml> {
  const m = (await import('yaml')) as Yaml & { default?: Yaml };
  return m.default ?? m;
}

/** The line of a path into the list of jobs of `text` (JSON or YAML), for errors. */
function locator(y: Yaml, text: string, wrapped: boolean): (path: readonly (string | number)[]) => number | undefined {
  const lines = new y.LineCounter();
  const doc = y.parseDocument(text, { lineCounter: lines });
  return (path) => {
    const full = wrapped ? ['jobs', ...path] : [...path];
    for (let n = full.length; n > 0; n--) {
      const node = doc.getIn(full.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/**
 * Reads and validates a batch file (YAML, of which JSON is a subset); relative `cwd`s are taken
 * from the file's directory; notes (the old `label:`) go to `warn`. Async only to load the YAML
 * parser when the text is not JSON, or to find the line of an error.
 * @throws BatchError when the file cannot be read, is not YAML/JSON, or a job is invalid (with its line).
 */
export async function loadBatch(file: string, warn?: (note: string) => void): Promise<Job[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new BatchError(`${file}: cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
  let data: unknown;
  try {
    data = jsonOrUndefined(text) ?? (await yaml()).parse(text);
  } catch (e) {
    throw new BatchError(`${file}: not valid YAML or JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const baseDir = dirname(resolve(file));
  try {
    return parseBatch(data, file, baseDir, { warn });
  } catch (e) {
    if (!(e instanceof BatchError) || e.at === undefined) throw e;
    // The same check again, knowing lines: it throws the same error, now with the line.
    return parseBatch(data, file, baseDir, { locate: locator(await yaml(), text, !Array.isArray(data)) });
  }
}
