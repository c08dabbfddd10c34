/**
 * Validation and defaults of an Ask (SPEC R1): zod, errors name the field and the value.
 * Absent cpus = 1, explicit 0 = no cores (issue 3, acceptance 13).
 */
import { z } from 'zod';
import { type Ask, OnOversize, Policy } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { NormalizedAsk } from './types.js';

/** Largest cores an ask may name. */
export const MAX_CPUS = 65_536;
/** Largest GPU count an ask may name. */
export const MAX_GPUS = 4_096;
/** Largest memory an ask or a machine may name, in MB (1 PiB). */
export const MAX_RAM_MB = 1 << 30;

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
    z.string(),
    z.string().max(65_536).refine((v) => !v.includes('\0'), 'an env value may not contain NUL'),
  ),
});

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
    const fieldName = [field, SNAKE[key] ?? key, ...path.slice(1)].join('.');
    throw new BerthError('invalid_argument', `${fieldName}: ${issue.message} (got ${JSON.stringify(value)})`);
  }
  const a = r.data;
  const over = ask.onOversize ?? OnOversize.ON_OVERSIZE_UNSPECIFIED;
  if (over !== OnOversize.ON_OVERSIZE_UNSPECIFIED && over !== OnOversize.ON_OVERSIZE_CLAMP && over !== OnOversize.ON_OVERSIZE_FAIL) {
    throw new BerthError('invalid_argument', `${field}.on_oversize: unknown value ${over}: use ON_OVERSIZE_CLAMP (1) or ON_OVERSIZE_FAIL (2)`);
  }
  return {
    cpus: a.cpus ?? 1,
    gpus: a.gpus,
    ramMb: a.ramMb,
    label: a.label,
    policy: a.policy === Policy.POLICY_REQUIRE ? 'require' : 'prefer',
    node: a.node,
    runId: a.runId,
    env: { ...a.env },
    ...(over === OnOversize.ON_OVERSIZE_FAIL ? { onOversize: 'fail' as const } : {}),
  };
}
