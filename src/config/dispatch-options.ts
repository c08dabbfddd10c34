/**
 * Options of `berth dispatch`, validated once (SPEC D1–D8). Bad values throw OptionsError naming
 * the flag and the value (CLI exit 2): `-j 0`, duplicate ids in `--devices`, a malformed range.
 */
import * as z from 'zod';
import { deviceRange, OptionsError, parseOptions, serverList } from './fields.js';

export { jobsLimit } from './jobs-limit.js';

/** Default variable that receives a job's device range. */
export const DEFAULT_DEVICE_ENV = 'CUDA_VISIBLE_DEVICES';
/** Default `--max-overtakes`: how many later jobs may start ahead of one blocked job under `--backfill`. */
export const DEFAULT_MAX_OVERTAKES = 10;
/** Longest `--timeout` / `--grace` in seconds (Node timers hold at most 2^31 − 1 ms). */
export const MAX_SECONDS = 2_147_483;

interface NumberRule {
  whole?: boolean;
  min: number;
  /** `min` is exclusive. */
  above?: boolean;
  max?: number;
}

/** Why `text` breaks `r`, or undefined when it is fine. */
function numberProblem(text: string, r: NumberRule): string | undefined {
  const ok = r.whole ? /^-?\d+$/.test(text) : /^-?\d+(\.\d+)?$/.test(text);
  const n = Number(text);
  if (!ok) return r.whole ? 'expected a whole number' : 'expected a number of seconds, e.g. 10 or 0.5';
  if (r.above ? n <= r.min : n < r.min) return `must be ${r.above ? 'more than' : 'at least'} ${r.min}`;
  if (r.max !== undefined && n > r.max) return `must be at most ${r.max}`;
  return undefined;
}

/** A number from a flag string or a number. One path, so errors say what is wrong (no union "Invalid input"). */
function numberFlag(r: NumberRule) {
  return z.union([z.string(), z.number()]).transform((v, ctx): number => {
    const problem = numberProblem(String(v).trim(), r);
    if (problem === undefined) return Number(v);
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  });
}

/** `-j`: `auto` or a whole number 1…4096. */
const jobsFlag = z.union([z.string(), z.number()]).transform((v, ctx): number | 'auto' => {
  const text = String(v).trim();
  if (text === 'auto') return 'auto';
  const problem = numberProblem(text, { whole: true, min: 1, max: 4096 });
  if (problem === undefined) return Number(text);
  ctx.addIssue({ code: 'custom', message: `${problem} or auto` });
  return z.NEVER;
});

const schema = z.object({
  devices: deviceRange.optional(), // no id twice, at most MAX_DEVICES (fields.ts)
  jobs: jobsFlag.default('auto'),
  failFast: z.boolean().default(false),
  backfill: z.boolean().default(false),
  maxOvertakes: numberFlag({ whole: true, min: 1, max: 1_000_000 }).optional(),
  timeout: numberFlag({ min: 0, above: true, max: MAX_SECONDS }).optional(),
  grace: numberFlag({ min: 0, max: MAX_SECONDS }).default(5),
  deviceEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a variable name such as CUDA_VISIBLE_DEVICES')
    .default(DEFAULT_DEVICE_ENV),
  platform: z.string().trim().min(1, 'must not be empty').optional(),
  junit: z.string().min(1, 'must not be empty').optional(),
  server: serverList.optional(),
  logDir: z.string().min(1, 'must not be empty').optional(),
  tailLines: numberFlag({ whole: true, min: 1, max: 100_000 }).default(50),
});

/**
 * Validated `berth dispatch` options. Units: `timeout` and `grace` in seconds. `overtakes` is what
 * the scheduler gets: 0 = strict FIFO, else `--max-overtakes` (default 10) under `--backfill`.
 */
export type DispatchOptions = Omit<z.output<typeof schema>, 'maxOvertakes'> & { overtakes: number };

const FLAGS: Record<string, string> = {
  devices: '--devices',
  jobs: '-j/--jobs',
  failFast: '--fail-fast',
  backfill: '--backfill',
  maxOvertakes: '--max-overtakes',
  timeout: '--timeout',
  grace: '--grace',
  deviceEnv: '--device-env',
  platform: '--platform',
  junit: '--junit',
  server: '--server',
  logDir: '--log-dir',
  tailLines: '--tail-lines',
};

/**
 * Validates commander's flags. @throws OptionsError naming the flag and the value; also for
 * `--max-overtakes` without `--backfill` (it would do nothing).
 */
export function resolveDispatchOptions(flags: Record<string, unknown>): DispatchOptions {
  const raw = Object.fromEntries(Object.entries(flags).filter(([k, v]) => k in FLAGS && v !== undefined));
  const { maxOvertakes, ...o } = parseOptions(schema, raw, FLAGS);
  if (maxOvertakes !== undefined && !o.backfill)
    throw new OptionsError(`--max-overtakes: only used with --backfill (got ${maxOvertakes})`);
  return { ...o, overtakes: o.backfill ? (maxOvertakes ?? DEFAULT_MAX_OVERTAKES) : 0 };
}

/** The flag table and schema of `berth dispatch`, read by the generated reference (scripts/gen-reference.ts). */
export { FLAGS as DISPATCH_FLAGS, schema as dispatchSchema };
