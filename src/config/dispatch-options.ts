/**
 * Options of `berth dispatch`, validated once (SPEC D1–D8). Bad values throw OptionsError naming
 * the flag and the value (CLI exit 2): `-j 0`, duplicate ids in `--devices`, a malformed range.
 */
import { z } from 'zod';
import { parseRange } from '../resources/ranges.js';
import { address, deviceRange, parseOptions, seconds, wholeNumber } from './fields.js';

/** Default variable that receives a job's device range. */
export const DEFAULT_DEVICE_ENV = 'CUDA_VISIBLE_DEVICES';
/** Default overtakes per blocked head when `--backfill` is given without a number. */
export const DEFAULT_BACKFILL = 10;

/** `--devices`: a range spec whose parts name no id twice (`0-3,2` is an error, unlike parseRange). */
const deviceList = z.string().superRefine((spec, ctx) => {
  const seen = new Set<number>();
  for (const part of spec.split(',')) {
    if (part.trim() === '') continue; // parseRange reports empty elements
    let ids: number[];
    try {
      ids = parseRange(part);
    } catch {
      return; // deviceRange below names the malformed spec
    }
    for (const id of ids) {
      if (seen.has(id)) ctx.addIssue({ code: 'custom', message: `device ${id} is listed twice` });
      seen.add(id);
    }
  }
}).pipe(deviceRange);

const positiveSeconds = seconds.pipe(z.number().positive('must be more than 0'));

const schema = z.object({
  devices: deviceList.optional(),
  jobs: z.union([z.literal('auto'), wholeNumber(1, 4096)]).default('auto'),
  failFast: z.boolean().default(false),
  backfill: z.union([z.literal(true).transform(() => DEFAULT_BACKFILL), z.literal(false).transform(() => 0), wholeNumber(1, 1_000_000)]).default(0),
  timeout: positiveSeconds.optional(),
  grace: seconds.default(5),
  deviceEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a variable name such as CUDA_VISIBLE_DEVICES').default(DEFAULT_DEVICE_ENV),
  platform: z.string().trim().min(1, 'must not be empty').optional(),
  junit: z.string().min(1, 'must not be empty').optional(),
  server: address.optional(),
  logDir: z.string().min(1, 'must not be empty').optional(),
  tailLines: wholeNumber(1, 100_000).default(50),
});

/** Validated `berth dispatch` options. Units: `timeout` and `grace` in seconds. */
export type DispatchOptions = z.output<typeof schema>;

const FLAGS: Record<string, string> = {
  devices: '--devices', jobs: '-j/--jobs', failFast: '--fail-fast', backfill: '--backfill', timeout: '--timeout', grace: '--grace',
  deviceEnv: '--device-env', platform: '--platform', junit: '--junit', server: '--server', logDir: '--log-dir', tailLines: '--tail-lines',
};

/** Validates commander's flags. @throws OptionsError naming the flag and the value. */
export function resolveDispatchOptions(flags: Record<string, unknown>): DispatchOptions {
  const raw = Object.fromEntries(Object.entries(flags).filter(([k, v]) => k in FLAGS && v !== undefined));
  return parseOptions(schema, raw, FLAGS);
}

/**
 * The most jobs in flight: `-j N` as given; `auto` = the number of devices, or for a platform
 * whose name ends in `sim` (a simulator that runs on cores) min(cores, devices); never below 1.
 */
export function jobsLimit(jobs: number | 'auto', devices: number, cores: number, platform?: string): number {
  if (jobs !== 'auto') return jobs;
  const n = platform !== undefined && platform.endsWith('sim') ? Math.min(cores, devices) : devices;
  return Math.max(1, n);
}
