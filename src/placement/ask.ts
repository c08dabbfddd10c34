/**
 * Validation and defaults of an Ask (SPEC R1): zod is the schema of record and names the field and
 * the value in every error. A well-formed ask takes a precompiled check that allocates nothing
 * (issue 9: zod was ~4% of the server's time per claim); anything it does not accept goes through
 * zod, which either reports the error or (should the check be stricter than the schema) accepts.
 * Absent cpus = 1, explicit 0 = no cores (issue 3, acceptance 13). `resources` (issue 23): named quantities in
 * steps of 0.0001, kept in units of 1e-4; a finer one is INVALID_ARGUMENT naming `ask.resources.<name>`.
 * `hold_ms` (SPEC S3): 0..3,600,000, kept on the normalized ask only when above 0.
 * `gpu_share` (issue 23 item 3, SPEC P14): a fraction of one GPU in (0, 1) in steps of 0.0001, with `gpus` 0 (Ray's
 * rule: a fraction or a whole number), kept in units; `gpu_type`: the GPU type required, e.g. `a100`.
 * `priority` (SPEC Q1): an integer in ±1,000,000,000; `priority_class`: a class name, resolved by the placer
 * against the config's classes (priority.ts). Both are kept only when given.
 */
import * as z from 'zod';
import { type Ask, OnOversize, OnPreempt, Policy } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import { namedSchema, toUnits, UNIT } from '../resources/quantity.js';
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

const NAME = /^[A-Za-z0-9_.:-]*$/;
/** What a run id may hold (an ask's, and so Cancel's): letters, digits and _ . : - (no control characters). */
export const RUN_ID = NAME;
const LABEL = /^[A-Za-z0-9_.-]*$/;
/** A node name is free text for people (status, logs, the page) but never holds control characters. */
const NODE = /^[^\u0000-\u001f\u007f-\u009f]*$/;
const MAX_LABEL = 63;
const MAX_NODE = 256;
/** Longest run id, in characters. */
export const MAX_RUN_ID = 128;
const MAX_ENV_VALUE = 65_536;
/** Longest a claim may await its holder after its stream broke, in ms (SPEC S3: one hour). */
export const MAX_HOLD_MS = 3_600_000;
/** Largest priority an ask may name, either way (SPEC Q1; Kubernetes' bound for user priority classes). */
export const MAX_PRIORITY = 1_000_000_000;
/** What a priority class name may hold: a letter, then letters, digits, _ and - (at most 63). */
export const CLASS_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;

const name = (what: string, max: number) =>
  z.string().max(max, `at most ${max} characters`).regex(NAME, `${what} may hold only letters, digits and _ . : -`);

/** The rule a GPU share breaks (SPEC P14). */
export const SHARE_RULE =
  'a share of one GPU is a fraction in (0, 1) in steps of 0.0001; whole GPUs go in ask.gpus (Ray: 0.5 or 2, not 1.5)';
/** True when `v` is a share a GPU can take: in (0, 1) and a multiple of 0.0001. */
export const isShare = (v: number) => {
  const u = toUnits(v);
  return u !== undefined && u > 0 && u < UNIT;
};

const fields = z.object({
  cpus: z.number().int().min(0).max(MAX_CPUS, `at most ${MAX_CPUS} cores`).optional(),
  gpus: z.number().int().min(0).max(MAX_GPUS, `at most ${MAX_GPUS} GPUs`),
  ramMb: z.number().int().min(0).max(MAX_RAM_MB, `at most ${MAX_RAM_MB} MB`).optional(),
  resources: namedSchema.optional(),
  gpuShare: z
    .number()
    .refine((v) => v === 0 || isShare(v), SHARE_RULE)
    .optional(),
  gpuType: z
    .string()
    .max(MAX_LABEL, `at most ${MAX_LABEL} characters`)
    .regex(LABEL, 'a GPU type holds only letters, digits and _ . - (e.g. a100, 1g.10gb)')
    .optional(),
  label: z
    .string()
    .max(MAX_LABEL, `at most ${MAX_LABEL} characters`)
    .regex(LABEL, 'a label holds only letters, digits and _ . - (no spaces)'),
  policy: z.union(
    [z.literal(Policy.POLICY_UNSPECIFIED), z.literal(Policy.POLICY_PREFER), z.literal(Policy.POLICY_REQUIRE)],
    {
      error: 'unknown policy: use POLICY_PREFER (1) or POLICY_REQUIRE (2)',
    },
  ),
  node: z.string().max(MAX_NODE, `at most ${MAX_NODE} characters`).regex(NODE, 'no control characters'),
  priority: z
    .number()
    .int('a whole number')
    .min(-MAX_PRIORITY, `at least -${MAX_PRIORITY}`)
    .max(MAX_PRIORITY, `at most ${MAX_PRIORITY}`)
    .optional(),
  priorityClass: z
    .string()
    .refine((v) => v === '' || CLASS_NAME.test(v), 'a class name: a letter, then letters, digits, _ and - (at most 63)')
    .optional(),
  runId: name('a run id', MAX_RUN_ID),
  holdMs: z
    .number()
    .int('a whole number of ms')
    .min(0, 'at least 0 ms')
    .max(MAX_HOLD_MS, `at most ${MAX_HOLD_MS} ms (one hour)`)
    .optional(),
  env: z
    .record(
      z
        .string()
        .max(MAX_ENV_KEY, `at most ${MAX_ENV_KEY} characters`)
        .superRefine((k, ctx) => {
          const why = reservedEnvKey(k);
          if (why) ctx.addIssue({ code: 'custom', message: why });
        }),
      z
        .string()
        .max(MAX_ENV_VALUE)
        .refine((v) => !v.includes('\0'), 'an env value may not contain NUL'),
    )
    .refine((e) => Object.keys(e).length <= MAX_ENV_KEYS, `at most ${MAX_ENV_KEYS} variables`)
    .refine((e) => envBytes(e) <= MAX_ENV_BYTES, `at most ${MAX_ENV_BYTES} bytes of names and values in all`),
});
// A share with whole GPUs too is refused (SPEC P14): one or the other.
const schema = fields.superRefine((a, ctx) => {
  if (a.gpuShare && a.gpus > 0)
    ctx.addIssue({ code: 'custom', path: ['gpuShare'], message: `${SHARE_RULE}; set ask.gpus to 0 with a share` });
});

/**
 * Checks a priority and a class name given apart from an Ask (GroupAsk.priority, priority_class; SPEC Q1) by the
 * rules an Ask's follow. @throws BerthError INVALID_ARGUMENT naming `<at>priority` or `<at>priority_class`.
 */
export function checkPriority(priority: number | undefined, priorityClass: string | undefined, at: string): void {
  if (priority !== undefined && !(Number.isInteger(priority) && Math.abs(priority) <= MAX_PRIORITY))
    throw new BerthError(
      'invalid_argument',
      `${at}priority: a whole number in ±${MAX_PRIORITY} (got ${JSON.stringify(priority)})`,
    );
  if (priorityClass && !CLASS_NAME.test(priorityClass))
    throw new BerthError(
      'invalid_argument',
      `${at}priority_class: a class name: a letter, then letters, digits, _ and - (at most 63) ` +
        `(got ${JSON.stringify(priorityClass)})`,
    );
}

/** Size of `env` in UTF-8 bytes, names and values. */
export function envBytes(env: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(env)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

const SNAKE: Record<string, string> = {
  ramMb: 'ram_mb',
  runId: 'run_id',
  holdMs: 'hold_ms',
  gpuShare: 'gpu_share',
  gpuType: 'gpu_type',
  priorityClass: 'priority_class',
};

const count = (v: unknown, max: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
const text = (v: unknown, max: number, re?: RegExp): boolean =>
  typeof v === 'string' && v.length <= max && (!re || re.test(v));
const POLICIES: readonly number[] = [Policy.POLICY_UNSPECIFIED, Policy.POLICY_PREFER, Policy.POLICY_REQUIRE];
const OVERSIZE: readonly number[] = [
  OnOversize.ON_OVERSIZE_UNSPECIFIED,
  OnOversize.ON_OVERSIZE_CLAMP,
  OnOversize.ON_OVERSIZE_FAIL,
];
const PREEMPT: readonly number[] = [
  OnPreempt.ON_PREEMPT_UNSPECIFIED,
  OnPreempt.ON_PREEMPT_REQUEUE,
  OnPreempt.ON_PREEMPT_CANCEL,
];

/**
 * True when `ask` certainly passes `schema` and the env key rule: the same rules, checked without
 * allocating. Must never accept what the schema refuses (test/placement/bad-asks.test.ts compares
 * the two on generated asks); keep it in step when a rule is added to `schema`.
 */
export function isWellFormedAsk(ask: Ask): boolean {
  if (ask.cpus !== undefined && !count(ask.cpus, MAX_CPUS)) return false;
  if (!count(ask.gpus, MAX_GPUS)) return false;
  if (ask.ramMb !== undefined && !count(ask.ramMb, MAX_RAM_MB)) return false;
  if (!text(ask.label, MAX_LABEL, LABEL) || !text(ask.node, MAX_NODE, NODE)) return false;
  if (!text(ask.runId, MAX_RUN_ID, NAME) || !POLICIES.includes(ask.policy)) return false;
  if (ask.onOversize !== undefined && !OVERSIZE.includes(ask.onOversize)) return false;
  if (ask.holdMs !== undefined && !count(ask.holdMs, MAX_HOLD_MS)) return false;
  if (ask.onPreempt !== undefined && !PREEMPT.includes(ask.onPreempt)) return false;
  for (const _ in ask.resources) return false; // named resources take the schema path (issue 23)
  if (ask.gpuShare !== undefined || ask.gpuType !== undefined) return false; // GPU shares, types too (issue 23)
  if (ask.priority !== undefined || ask.priorityClass) return false; // priorities too (SPEC Q1)
  const env: unknown = ask.env;
  if (typeof env !== 'object' || env === null || Object.getPrototypeOf(env) !== Object.prototype) return false;
  let keys = 0;
  let bytes = 0;
  for (const key in env) {
    if (!Object.hasOwn(env, key) || key.length > MAX_ENV_KEY || !ENV_KEY.test(key) || reservedEnvKey(key)) return false;
    const v = (env as Record<string, unknown>)[key];
    if (!text(v, MAX_ENV_VALUE) || (v as string).includes('\0')) return false;
    keys++;
    bytes += Buffer.byteLength(key) + Buffer.byteLength(v as string);
  }
  return keys <= MAX_ENV_KEYS && bytes <= MAX_ENV_BYTES;
}

/**
 * Validates a wire Ask and applies defaults.
 * @param field the request field holding it, used in error messages (e.g. "ask")
 * @throws BerthError('invalid_argument') naming `<field>.<name>` and the value; nothing changes.
 */
export function normalizeAsk(ask: Ask | undefined, field = 'ask'): NormalizedAsk {
  if (!ask) throw new BerthError('invalid_argument', `${field}: required`);
  return isWellFormedAsk(ask) ? normalized(ask) : parseAsk(ask, field);
}

/**
 * The schema path: validates `ask` with zod (the schema of record) and applies defaults. Used for
 * every ask the precompiled check does not accept. Same errors as normalizeAsk.
 */
export function parseAsk(ask: Ask, field = 'ask'): NormalizedAsk {
  for (const key of Object.keys(ask.env ?? {})) {
    if (!ENV_KEY.test(key))
      throw new BerthError(
        'invalid_argument',
        `${field}.env: key ${JSON.stringify(key)} is not a variable name like XLA_FLAGS (no =, no spaces)`,
      );
  }
  const r = schema.safeParse(ask);
  if (!r.success) {
    const issue = r.error.issues[0];
    const path = issue.path.map(String);
    const key = path[0] ?? '';
    let value: unknown = (ask as unknown as Record<string, unknown>)[key];
    if (key === 'env' && path[1] !== undefined) value = ask.env[path[1]];
    else if (key === 'resources' && path[1] !== undefined) value = ask.resources?.[path[1]];
    else if (key === 'env' && typeof ask.env === 'object' && ask.env !== null) {
      value = `${Object.keys(ask.env).length} variables, ${envBytes(ask.env)} bytes`;
    }
    const fieldName = [field, SNAKE[key] ?? key, ...path.slice(1)].join('.');
    const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    const shown = JSON.stringify(value) ?? 'nothing';
    throw new BerthError(
      'invalid_argument',
      `${fieldName}: ${message} (got ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown})`,
    );
  }
  const over = ask.onOversize ?? OnOversize.ON_OVERSIZE_UNSPECIFIED;
  if (!OVERSIZE.includes(over)) {
    throw new BerthError(
      'invalid_argument',
      `${field}.on_oversize: unknown value ${over}: use ON_OVERSIZE_CLAMP (1) or ON_OVERSIZE_FAIL (2)`,
    );
  }
  const preempt = ask.onPreempt ?? OnPreempt.ON_PREEMPT_UNSPECIFIED;
  if (!PREEMPT.includes(preempt)) {
    throw new BerthError(
      'invalid_argument',
      `${field}.on_preempt: unknown value ${preempt}: use ON_PREEMPT_REQUEUE (1) or ON_PREEMPT_CANCEL (2)`,
    );
  }
  return normalized({ ...r.data, onOversize: over, onPreempt: preempt });
}

type AskFields = Pick<Ask, 'cpus' | 'gpus' | 'ramMb' | 'label' | 'policy' | 'node' | 'runId' | 'env' | 'onOversize'> & {
  onPreempt?: OnPreempt;
  holdMs?: number;
  gpuShare?: number;
  gpuType?: string;
  priority?: number;
  priorityClass?: string;
  /** Named resources in units (the schema path only). */
  resources?: Record<string, number>;
};

/** The defaults applied to a valid ask. */
function normalized(a: AskFields): NormalizedAsk {
  return {
    cpus: a.cpus ?? 1,
    gpus: a.gpus,
    ramMb: a.ramMb,
    label: a.label,
    policy: a.policy === Policy.POLICY_REQUIRE ? 'require' : 'prefer',
    node: a.node,
    runId: a.runId,
    env: { ...a.env },
    ...(a.onOversize === OnOversize.ON_OVERSIZE_FAIL ? { onOversize: 'fail' as const } : {}),
    ...(a.onPreempt === OnPreempt.ON_PREEMPT_CANCEL ? { onPreempt: 'cancel' as const } : {}),
    ...(a.holdMs ? { holdMs: a.holdMs } : {}),
    ...(a.resources && Object.keys(a.resources).length ? { resources: a.resources } : {}),
    ...(a.gpuShare ? { gpuShare: toUnits(a.gpuShare) } : {}),
    ...(a.gpuType ? { gpuType: a.gpuType } : {}),
    ...(a.priority !== undefined ? { priority: a.priority } : {}),
    ...(a.priorityClass ? { priorityClass: a.priorityClass } : {}),
  };
}
