/**
 * The ergonomic ask of the TypeScript client and its mapping onto the generated berth.v1 Ask.
 *
 * The server validates every ask (SPEC R1) and names the field; here only what protobuf cannot carry
 * is refused (negative, fractional or over-uint32 numbers, an unknown policy), with the server's shape
 * of message: `ask.cpus: must be a whole number >= 0 (got -1)` — as the Python client does.
 */
import { Ask, OnOversize, OnPreempt, Policy } from '../../generated/ts/berth/v1/resources.js';
import { InvalidAsk } from './errors.js';

/** What a node asks for (SPEC vocabulary "ask"). Every field is optional. */
export interface AskInput {
  /** Cores; absent = the server's default of 1, 0 = no cores. */
  cpus?: number;
  /** GPUs, a count (default 0). */
  gpus?: number;
  /** Memory in MB; absent = not asked. */
  ramMb?: number;
  /** Machine label, e.g. "gpu"; absent = any machine. */
  label?: string;
  /** How the label is treated: 'prefer' (default, SPEC P4) or 'require' (SPEC P3). */
  policy?: 'prefer' | 'require';
  /** Node name shown in waiting lists and events, conventionally "<flow>.<node>". */
  node?: string;
  /** Run the claim belongs to; `cancel(runId)` abandons it while it waits. */
  runId?: string;
  /** Extra environment the node runs with (e.g. XLA_FLAGS); the allocation's own variables win (SPEC R8). */
  env?: Record<string, string>;
  /** An ask no machine can ever hold: 'clamp' (default, cut to the best machine, SPEC P5) or 'fail' (Oversize). */
  onOversize?: 'clamp' | 'fail';
  /**
   * Claims only: how long, in ms, the server keeps the claim after its stream broke, for its holder to
   * resume it (SPEC S3); 0 or absent = given back at once (SPEC P8). The server bounds it (at most 1 h).
   */
  holdMs?: number;
  /** Queue order (SPEC Q1): an integer in ±1,000,000,000, higher first; absent = the class's or 0. */
  priority?: number;
  /** A priority class of the server's config (docs/priorities.md); a class with `preemption: lower` may preempt. */
  priorityClass?: string;
  /**
   * Claims only, what preempting it does (SPEC Q2): 'requeue' (default) waits again at its place on the same stream
   * (the lease hears `onRequeued`, then `onRegranted` with its new grant); 'cancel' ends the lease (Preempted).
   */
  onPreempt?: 'requeue' | 'cancel';
}

const POLICIES = { prefer: Policy.POLICY_PREFER, require: Policy.POLICY_REQUIRE } as const;
const UINT32_MAX = 2 ** 32 - 1;

/** `value` as a uint32 for field `ask.<name>`; InvalidAsk naming it when protobuf cannot carry it. */
export function count(name: string, value: unknown): number {
  const field = name.includes('.') ? name : `ask.${name}`;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new InvalidAsk(`${field}: must be a whole number >= 0 (got ${JSON.stringify(value)})`, field);
  if (value > UINT32_MAX) throw new InvalidAsk(`${field}: at most ${UINT32_MAX} (got ${value})`, field);
  return value;
}

const MAX_PRIORITY = 1_000_000_000;

/** `value` as `ask.priority`; InvalidAsk naming it unless a whole number in ±1,000,000,000. */
function priority(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > MAX_PRIORITY)
    throw new InvalidAsk(
      `ask.priority: a whole number in ±${MAX_PRIORITY} (got ${JSON.stringify(value)})`,
      'ask.priority',
    );
  return value;
}

function text(name: string, value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string')
    throw new InvalidAsk(`ask.${name}: must be a string (got ${JSON.stringify(value)})`, `ask.${name}`);
  return value;
}

function env(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidAsk(`ask.env: must be an object of strings (got ${JSON.stringify(value)})`, 'ask.env');
  for (const [k, v] of Object.entries(value))
    if (typeof v !== 'string')
      throw new InvalidAsk(`ask.env[${JSON.stringify(k)}]: must be a string (got ${JSON.stringify(v)})`, 'ask.env');
  return { ...(value as Record<string, string>) };
}

/**
 * The generated Ask for `a` (defaults from `Ask.fromPartial`, never restated here).
 * @throws InvalidAsk naming the field (`ask.cpus`, `ask.policy`, ...) when a value cannot be encoded.
 */
export function toAsk(a: AskInput = {}): Ask {
  const policy = a.policy ?? 'prefer';
  if (!Object.hasOwn(POLICIES, policy))
    throw new InvalidAsk(`ask.policy: must be 'prefer' or 'require' (got ${JSON.stringify(policy)})`, 'ask.policy');
  const oversize = a.onOversize ?? 'clamp';
  if (oversize !== 'clamp' && oversize !== 'fail')
    throw new InvalidAsk(
      `ask.on_oversize: must be 'clamp' or 'fail' (got ${JSON.stringify(oversize)})`,
      'ask.on_oversize',
    );
  const preempt = a.onPreempt ?? 'requeue';
  if (preempt !== 'requeue' && preempt !== 'cancel')
    throw new InvalidAsk(
      `ask.on_preempt: must be 'requeue' or 'cancel' (got ${JSON.stringify(preempt)})`,
      'ask.on_preempt',
    );
  return Ask.fromPartial({
    cpus: a.cpus === undefined ? undefined : count('cpus', a.cpus),
    gpus: count('gpus', a.gpus ?? 0),
    ramMb: a.ramMb === undefined ? undefined : count('ram_mb', a.ramMb),
    label: text('label', a.label),
    policy: POLICIES[policy],
    node: text('node', a.node),
    runId: text('run_id', a.runId),
    env: env(a.env),
    onOversize: oversize === 'fail' ? OnOversize.ON_OVERSIZE_FAIL : undefined,
    holdMs: count('hold_ms', a.holdMs ?? 0),
    priority: a.priority === undefined ? undefined : priority(a.priority),
    priorityClass: a.priorityClass === undefined ? undefined : text('priority_class', a.priorityClass),
    onPreempt: preempt === 'cancel' ? OnPreempt.ON_PREEMPT_CANCEL : undefined,
  });
}

/** True when the ask said onOversize 'fail' (FAILED_PRECONDITION is then Oversize). */
export function oversizeFails(ask: Ask): boolean {
  return ask.onOversize === OnOversize.ON_OVERSIZE_FAIL;
}
