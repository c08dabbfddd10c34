/**
 * Validation and defaults of an Ask (SPEC R1): zod, errors name the field and the value.
 * Absent cpus = 1, explicit 0 = no cores (issue 3, acceptance 13).
 */
import { z } from 'zod';
import { type Ask, Policy } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import { reservedEnvKey } from './env.js';
import type { NormalizedAsk } from './types.js';

/** Largest cores an ask may name. */
export const MAX_CPUS = 65_536;
/** Largest GPU count an ask may name. */
export const MAX_GPUS = 4_096;
/** Largest memory an ask or a machine may name, in MB (1 PiB). */
export const MAX_RAM_MB = 1 << 30;
/**
 * Bounds of an ask's env (issue 10 item 9): the env is listed in GetSnapshot, so one claim must stay
 * far below the 4 MiB a default client accepts. Variables, name length, names + values in bytes.
 */
export const MAX_ENV_KEYS = 128;
export const MAX_ENV_KEY = 256;
export const MAX_ENV_BYTES = 64 * 1024;

const name = (what: string, max: number) =>
  z.string().max(max, `at most ${max} characters`).regex(/^[A-Za-z0-9_.:\-]*$/, `${what} may hold only letters, digits and _ . : -`);

const schema = z.object({
  cpus: z.number().int().min(0).max(MAX_CPUS, `at most ${MAX_CPUS} cores`).optional(),
  gpus: z.number().int().min(0).max(MAX_GPUS, `at most ${MAX_GPUS} GPUs`),
  ramMb: z.number().int().min(0).max(MAX_RAM_MB, `at most ${MAX_RAM_MB} MB`).optional(),
  label: z.string().max(63, 'at most 63 characters').regex(/^[A-Za-z0-9_.\-]*$/, 'a label holds only letters, digits and _ . - (no spaces)'),
  policy: z.union([z.literal(Policy.POLICY_UNSPECIFIED), z.literal(Policy.POLICY_PREFER), z.literal(Policy.POLICY_REQUIRE)], {
    error: 'unknown policy: use POLICY_PREFER (1) or POLICY_REQUIRE (2)',
  }),
  node: z.string().max(256, 'at most 256 characters'),
  runId: name('a run id', 128),
  env: z.record(
    z.string().max(MAX_ENV_KEY, `at most ${MAX_ENV_KEY} characters`).superRefine((k, ctx) => {
      const why = reservedEnvKey(k);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    }),
    z.string().max(65_536).refine((v) => !v.includes('\0'), 'an env value may not contain NUL'),
  ).refine((e) => Object.keys(e).length <= MAX_ENV_KEYS, `at most ${MAX_ENV_KEYS} variables`)
    .refine((e) => envBytes(e) <= MAX_ENV_BYTES, `at most ${MAX_ENV_BYTES} bytes of names and values in all`),
});

/** Size of `env` in UTF-8 bytes, names and values. */
export function envBytes(env: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(env)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

const SNAKE: Record<string, string> = { ramMb: 'ram_mb', runId: 'run_id' };

/**
 * Validates a wire Ask and applies defaults.
 * @param field the request field holding it, used in error messages (e.g. "ask")
 * @throws BerthError('invalid_argument') naming `<field>.<name>` and the value; nothing changes.
 */
export function normalizeAsk(ask: Ask | undefined, field = 'ask'): NormalizedAsk {
  if (!ask) throw new BerthError('invalid_argument', `${field}: required`);
  for (const key of Object.keys(ask.env ?? {})) {
    if (!ENV_KEY.test(key)) throw new BerthError('invalid_argument', `${field}.env: key ${JSON.stringify(key)} is not a variable name like XLA_FLAGS (no =, no spaces)`);
  }
  const r = schema.safeParse(ask);
  if (!r.success) {
    const issue = r.error.issues[0];
    const path = issue.path.map(String);
    const key = path[0] ?? '';
    let value: unknown = (ask as unknown as Record<string, unknown>)[key];
    if (key === 'env' && path[1] !== undefined) value = ask.env[path[1]];
    else if (key === 'env') value = `${Object.keys(ask.env).length} variables, ${envBytes(ask.env)} bytes`;
    const fieldName = [field, SNAKE[key] ?? key, ...path.slice(1)].join('.');
    const message = issue.code === 'invalid_key' ? issue.issues[0]?.message ?? issue.message : issue.message;
    const shown = JSON.stringify(value) ?? 'nothing';
    throw new BerthError('invalid_argument', `${fieldName}: ${message} (got ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown})`);
  }
  const a = r.data;
  return {
    cpus: a.cpus ?? 1,
    gpus: a.gpus,
    ramMb: a.ramMb,
    label: a.label,
    policy: a.policy === Policy.POLICY_REQUIRE ? 'require' : 'prefer',
    node: a.node,
    runId: a.runId,
    env: { ...a.env },
  };
}
