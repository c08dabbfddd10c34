/**
 * zod field schemas shared by every command's options: listen addresses, counts, device ranges.
 * Each error message says what is expected; the caller prefixes the flag name and the value.
 */
import { namedSchema } from '../resources/quantity.js';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import * as z from 'zod';
import { LOG_LEVELS } from '../log/levels.js';
import { OptionsError } from './options-error.js';
import { MAX_DEVICE_ID, MAX_DEVICES, parseRange, RangeSpecError, repeatedId } from '../resources/ranges.js';

/** `host:port` on which to listen or to dial; IPv6 hosts in brackets. Port 0 = ephemeral. */
export const address = z
  .string()
  .trim()
  .refine((s) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$/.exec(s);
    return m !== null && Number(m[2]) <= 65535;
  }, 'expected host:port, e.g. 127.0.0.1:50051');

/**
 * One or several servers to dial, comma-separated (`a:50051,b:50051`: the members of an HA cluster, tried in
 * turn, SPEC S7); each entry `host:port`. Output: the entries joined by commas, blanks dropped.
 */
export const serverList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean),
  )
  .refine((list) => list.length > 0, 'expected host:port, or several comma-separated')
  .refine(
    (list) => list.every((a) => address.safeParse(a).success),
    'expected host:port, or several comma-separated, e.g. 10.0.0.5:50051,10.0.0.6:50051',
  )
  .transform((list) => list.join(','));

/** Turns a numeric flag/env string into a number; anything else is left for the schema to refuse. */
const numeric = (v: unknown) => (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v);

/** A whole number from a flag or env string; `min` and `max` inclusive. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER) {
  return z.preprocess(
    numeric,
    z
      .number({ error: 'expected a whole number' })
      .int('expected a whole number')
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}`),
  );
}

/** A non-negative number of seconds (decimals allowed). */
export const seconds = z.preprocess(
  numeric,
  z.number({ error: 'expected seconds, e.g. 10 or 0.5' }).min(0, 'must be at least 0'),
);

/** A hold in seconds, 0 to 3600 (decimals allowed): `--worker-hold` (SPEC S2). */
export const holdSeconds = z.preprocess(
  numeric,
  z
    .number({ error: 'expected seconds, e.g. 2 or 0.5' })
    .min(0, 'must be at least 0')
    .max(3600, 'at most 3600 (an hour); a longer hold is asked per call with disconnect_grace_ms'),
);

/** Seconds per duration unit. */
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds of a duration `90`, `90s`, `15m`, `24h` or `7d` (decimals allowed); undefined when it is none. */
export function durationSeconds(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/.exec(text);
  return m ? Number(m[1]) * UNIT_S[m[2] || 's'] : undefined;
}

/** A duration in seconds from `90`, `90s`, `15m`, `24h` or `7d` (or a number of seconds), above 0. */
export const duration = z.union([z.string(), z.number()]).transform((v, ctx): number => {
  const s = typeof v === 'number' ? v : durationSeconds(v);
  if (s !== undefined && s > 0) return s;
  ctx.addIssue({ code: 'custom', message: 'expected a duration above 0, e.g. 90s, 15m, 24h or 7d' });
  return z.NEVER;
});

/** A number of seconds above 0 (decimals allowed): for timeouts that 0 would make fire at once. */
export const positiveSeconds = z.preprocess(
  numeric,
  z.number({ error: 'expected seconds, e.g. 10 or 0.5' }).positive('must be more than 0'),
);

/**
 * A device range spec (`0-3`, `0,2,5`, `` for none) → sorted ids (SPEC D4), for every command's
 * device flag. Refused: a malformed spec, an id above MAX_DEVICE_ID, an id named twice (`0,0`),
 * more than MAX_DEVICES ids.
 */
export const deviceRange = z.string().transform((s, ctx) => {
  let ids: number[];
  try {
    ids = parseRange(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: e instanceof RangeSpecError ? e.message : String(e) });
    return z.NEVER;
  }
  const twice = repeatedId(s);
  if (twice !== undefined) {
    ctx.addIssue({ code: 'custom', message: `device ${twice} is listed twice` });
    return z.NEVER;
  }
  if (ids.length > MAX_DEVICES) {
    ctx.addIssue({
      code: 'custom',
      message: `${ids.length} device ids; at most ${MAX_DEVICES} (ids 0-${MAX_DEVICE_ID})`,
    });
    return z.NEVER;
  }
  return ids;
});

/**
 * A machine's GPU ids (`berth worker --gpus`, `berth serve --gpus`, BERTH_GPUS, the config's `gpus`):
 * a deviceRange, except that a bare single number is refused (issue 23 item 7): `--gpus 4` reads
 * as "4 GPUs" but would be the one GPU with id 4. Explicit specs stay: `4-4` or `4,` (one trailing
 * comma is allowed) for the one id, `0-3` for four.
 */
export const gpuIds = z.string().transform((s, ctx) => {
  const spec = s.trim();
  if (/^\d+$/.test(spec) && Number(spec) <= MAX_DEVICE_ID) {
    const n = Number(spec);
    const many = n === 0 ? 'no GPUs' : `${n} GPU${n === 1 ? '' : 's'}`;
    const range = n === 0 ? "''" : `0-${n - 1}`;
    ctx.addIssue({
      code: 'custom',
      message:
        `a bare number is ambiguous: these are GPU ids, not a count: for ${many} write ${range}; ` +
        `for the one GPU with id ${n} write ${n}-${n} (or '${n},')`,
    });
    return z.NEVER;
  }
  const r = deviceRange.safeParse(spec.endsWith(',') && !spec.endsWith(',,') ? spec.slice(0, -1) : s);
  if (r.success) return r.data;
  ctx.addIssue({ code: 'custom', message: r.error.issues[0].message });
  return z.NEVER;
});

/** Plain words for the file errors a user can fix (ENOENT → `no such file`). */
const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  ENOTDIR: 'no such file (a part of the path is not a directory)',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory',
  ELOOP: 'too many symbolic links',
};

/** Why `path` cannot be read, e.g. `cannot read '/x': no such file`, from the error fs raised. */
export function cannotRead(path: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
  return `cannot read '${path}': ${FILE_ERRORS[code] ?? (err instanceof Error ? err.message : String(err))}`;
}

/**
 * Reads the file a flag names (a PEM file read again at connect or bind time).
 * @throws Error `<flag>: cannot read '<file>': no such file` and the like.
 */
export function readFlagFile(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new Error(`${flag}: ${cannotRead(path, e)}`);
  }
}

/** A file that exists and can be read now (a PEM file, a batch file). */
export const readableFile = z
  .string()
  .min(1, 'must not be empty')
  .superRefine((path, ctx) => {
    try {
      if (statSync(path).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
      accessSync(path, constants.R_OK);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: cannotRead(path, e) });
    }
  });

/** A log level, any case (`INFO` = `info`): fatal, error, warn, info, debug, trace or silent. */
export const logLevel = z.preprocess(
  (v) => (typeof v === 'string' ? v.trim().toLowerCase() : v),
  z.enum(LOG_LEVELS, { error: `expected one of ${LOG_LEVELS.join(', ')}` }),
);

/** A worker, engine or provisioner name: `[A-Za-z0-9_.-]+`. */
export const plainName = z.string().regex(/^[A-Za-z0-9_.-]+$/, 'names are letters, digits, _ . -');

/** A comma-separated list of labels; each `[A-Za-z0-9_.-]+`. */
export const labelList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string().regex(/^[A-Za-z0-9_.-]+$/, 'labels are letters, digits, _ . -')));

/**
 * Named quantities as `name=quantity,…` (`trainer=1,nic=2`, `license/matlab=30`; issue 23): names per
 * RESOURCE_NAME, quantities in steps of 0.0001; parsed to units of 1e-4 (resources/quantity.ts).
 */
export const namedList = z
  .string()
  .transform((s) =>
    Object.fromEntries(
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
        .map((x) => {
          const i = x.lastIndexOf('=');
          return i < 0
            ? [x, Number.NaN]
            : [x.slice(0, i).trim(), x.slice(i + 1).trim() === '' ? Number.NaN : Number(x.slice(i + 1))];
        }),
    ),
  )
  .pipe(namedSchema);

// defined without zod (options-error.ts), so that code only throwing it stays small
export { OptionsError };

/** zod's type names in the words a config file's reader uses. */
const TYPE_WORDS: Record<string, string> = {
  array: 'a list',
  object: 'a mapping of key: value',
  string: 'text',
  number: 'a number',
  boolean: 'true or false',
};

/**
 * An issue's message for a person: zod's own wording for a wrong type ("Invalid input: expected array,
 * received object") becomes "expected a list"; a missing value "required"; every other message as the schema says.
 */
export function issueText(issue: z.core.$ZodIssue, value: unknown): string {
  if (issue.code !== 'invalid_type') return issue.message;
  if (value === undefined) return 'required';
  if (!issue.message.startsWith('Invalid input')) return issue.message; // the schema's own words
  return `expected ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
}

/**
 * Validates raw options against `schema`; on failure throws OptionsError naming the first bad
 * flag (`flags` maps option keys to flag names such as `--cpus` or env names) and its value.
 */
export function parseOptions<S extends z.ZodType>(
  schema: S,
  raw: Record<string, unknown>,
  flags: Record<string, string>,
): z.output<S> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const key = String(issue.path[0] ?? '');
  const flag = flags[key] ?? key;
  const value = raw[key];
  throw new OptionsError(`${flag}: ${issueText(issue, value)} (got ${JSON.stringify(value)})`);
}

/** Option key → [flag name, env var name], e.g. `cpus: ['--cpus', 'BERTH_CPUS']`. */
export type FlagTable = Record<string, readonly [flag: string, env: string]>;

/**
 * Validates options taken from flags, then env vars (`table`), then a config file's values (named
 * by file and line), then the schema's defaults; an empty env var counts as unset. @throws OptionsError naming the flag
 * or env var and its value.
 */
export function resolveOptions<S extends z.ZodType>(
  schema: S,
  table: FlagTable,
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file?: { values: Record<string, unknown>; names: Record<string, string> },
): z.output<S> {
  const raw: Record<string, unknown> = {};
  const names: Record<string, string> = {};
  for (const [key, [flag, envName]] of Object.entries(table)) {
    if (flags[key] !== undefined) {
      raw[key] = flags[key];
      names[key] = flag;
    } else if (env[envName] !== undefined && env[envName] !== '') {
      raw[key] = env[envName];
      names[key] = envName;
    } else if (file && file.values[key] !== undefined) {
      raw[key] = file.values[key];
      names[key] = file.names[key];
    }
  }
  return parseOptions(schema, raw, names);
}

/** The type of a machine's GPUs, e.g. a100 or a MIG profile 1g.10gb (issue 23 item 4). */
export const gpuTypeSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,63}$/, 'a GPU type holds 1–63 letters, digits and _ . - (e.g. a100, 1g.10gb)');
