/**
 * One call of a node on a worker (the Run RPC): the ergonomic request mapped onto the generated
 * RunRequest, and its stream read as items — Started, then metrics and log lines in order (SPEC W2),
 * link changes of the call's worker (SPEC S2), a retry's Retrying and its next Started (SPEC S8), then one
 * Result; a node's Failure is thrown as a RemoteError keeping its class name and traceback. Reading the
 * stream, and following it again after a break, is run-stream.ts.
 */
import { randomBytes } from 'node:crypto';
import type { LogLine, Metric, Result } from '../../generated/ts/berth/v1/calls.js';
import {
  type CallStarted,
  type Preempting,
  type Retrying,
  RunRequest,
  type WorkerLink,
} from '../../generated/ts/berth/v1/placement.js';
import { type AskInput, oversizeFails, toAsk } from './asks.js';
import { type ErrorContext, InvalidAsk } from './errors.js';

/** A run: a payload (`source` + `kwargs`, or `command`), names, and where (`claim`, or the ask's fields). */
export interface RunInput extends Omit<AskInput, 'node' | 'runId' | 'holdMs'> {
  /** Python source defining `process(**kwargs)`; its return value is the result. */
  source?: string;
  /** Keyword arguments of `process` (JSON-like; no NaN or Infinity). */
  kwargs?: Record<string, unknown>;
  /** A subprocess argv instead (result `{exit_code: 0}`; non-zero is RemoteError "ExitCode"). */
  command?: string[];
  /** Working directory of the command; absent = the worker's own. */
  cwd?: string;
  /**
   * Flow and node names (letters, digits, _ . -), default "flow" and "node": the call id is
   * `<runId>:<flow>.<node>`.
   */
  flow?: string;
  node?: string;
  /** Groups calls for `cancel(runId)`; default "ts-" and 12 hex digits. */
  runId?: string;
  /** Run inside this held claim (a Lease, its Granted, or a claim id) instead of placing by the ask's fields. */
  claim?: { claimId: string } | string;
  /** The call's deadline in ms (NodeTimeout); absent = none. */
  timeoutMs?: number;
  /**
   * How long, in ms, the call outlives a lost link to its worker and its caller's own broken stream, for the
   * client to follow it again (SPEC S2, S3); 0 or absent = the server's worker hold, and a broken stream
   * stops the call while the server runs (after a server restart the call is kept regardless). At most 1 h.
   */
  disconnectGraceMs?: number;
  /**
   * Times the call is placed again when its machine is lost (0 to 10, default 0; SPEC S8): a `retrying` item says
   * why, then the next attempt's `started`. Not with `claim` (InvalidAsk).
   */
  maxRetries?: number;
  /** Also retry the node's own failure (an exception, a non-zero exit); needs maxRetries. */
  retryOnFailure?: boolean;
}

/**
 * One item of `streamRun`, in order: `started`, then `metric` / `log` / `link` (and `retrying`, or `preempting` when
 * the Run's own claim is preempted, SPEC Q2), then one `result` last.
 */
export type RunItem =
  | { $case: 'started'; value: CallStarted }
  | { $case: 'metric'; value: Metric; callId: string; seq: number }
  | { $case: 'log'; value: LogLine; callId: string; seq: number }
  | { $case: 'link'; value: WorkerLink }
  | { $case: 'retrying'; value: Retrying }
  | { $case: 'preempting'; value: Preempting }
  | { $case: 'result'; value: Result };

/** A checked RunRequest and what error mapping needs of it. */
export interface RunSpec {
  request: RunRequest;
  ctx: ErrorContext;
}

const ASK_KEYS = ['cpus', 'gpus', 'ramMb', 'label', 'env'] as const;

function jsonLike(path: string, v: unknown): void {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new InvalidAsk(`${path}: NaN and infinities cannot be sent (got ${v})`, path);
    return;
  }
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) jsonLike(`${path}[${i}]`, x);
    return;
  }
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    for (const [k, x] of Object.entries(v)) jsonLike(`${path}[${JSON.stringify(k)}]`, x);
    return;
  }
  throw new InvalidAsk(`${path}: must be JSON-like (got ${typeof v})`, path);
}

/**
 * The RunRequest for `r` (defaults from `RunRequest.fromPartial`).
 * @throws InvalidAsk naming the field: `payload` (both or neither of source/command), `command`, `kwargs[...]`,
 *   `claim` (with ask fields too), `timeout_ms`, `maxRetries`, `retryOnFailure`, or an ask field.
 */
export function runSpec(r: RunInput): RunSpec {
  if ((r.source === undefined) === (r.command === undefined))
    throw new InvalidAsk('payload: give exactly one of source or command', 'payload');
  if (
    r.command !== undefined &&
    (!Array.isArray(r.command) || !r.command.length || r.command.some((a) => typeof a !== 'string'))
  )
    throw new InvalidAsk(`command: must be a non-empty array of strings (got ${JSON.stringify(r.command)})`, 'command');
  if (r.kwargs !== undefined) {
    if (r.source === undefined) throw new InvalidAsk('kwargs: only a source payload takes kwargs', 'kwargs');
    jsonLike('kwargs', r.kwargs);
  }
  const flow = r.flow ?? 'flow';
  const node = r.node ?? 'node';
  const runId = r.runId ?? `ts-${randomBytes(6).toString('hex')}`;
  let placement: RunRequest['placement'];
  if (r.claim !== undefined) {
    const extra = ASK_KEYS.filter((k) => r[k] !== undefined);
    if (extra.length)
      throw new InvalidAsk(`claim: runs with the claim's allocation; do not also pass ${extra.join(', ')}`, 'claim');
    const claimId = typeof r.claim === 'string' ? r.claim : r.claim?.claimId;
    if (typeof claimId !== 'string' || !claimId)
      throw new InvalidAsk(`claim: must be a held claim or a claim id (got ${JSON.stringify(r.claim)})`, 'claim');
    placement = { $case: 'claimId', value: claimId };
  } else {
    placement = { $case: 'ask', value: toAsk({ ...r, node: `${flow}.${node}`, runId }) };
  }
  const payload: RunRequest['payload'] =
    r.source !== undefined
      ? { $case: 'source', value: { source: r.source, kwargs: r.kwargs ?? {} } }
      : { $case: 'command', value: { argv: r.command ?? [], env: {}, cwd: r.cwd ?? '' } };
  const timeoutMs = r.timeoutMs === undefined ? 0 : Math.max(1, Math.round(positive('timeout_ms', r.timeoutMs)));
  const disconnectGraceMs = grace(r.disconnectGraceMs);
  const { maxRetries = 0, retryOnFailure = false } = r;
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 10)
    throw new InvalidAsk(
      `maxRetries: must be a whole number 0 to 10 (got ${JSON.stringify(maxRetries)})`,
      'maxRetries',
    );
  if (maxRetries > 0 && placement.$case === 'claimId')
    throw new InvalidAsk(
      "maxRetries: a run inside a claim is not retried (the claim's machine is gone with it)",
      'maxRetries',
    );
  if (typeof retryOnFailure !== 'boolean' || (retryOnFailure && maxRetries === 0))
    throw new InvalidAsk(
      `retryOnFailure: a boolean, true only with maxRetries (got ${retryOnFailure})`,
      'retryOnFailure',
    );
  const request = RunRequest.fromPartial({
    placement,
    payload,
    flow,
    node,
    runId,
    timeoutMs,
    disconnectGraceMs,
    maxRetries,
    retryOnFailure,
  });
  request.payload = payload; // fromPartial would copy kwargs through Struct's partial type; keep them as given
  const ask = placement.$case === 'ask' ? placement.value : undefined;
  return { request, ctx: { label: ask?.label, oversizeFails: ask ? oversizeFails(ask) : false } };
}

/** `disconnect_grace_ms` as sent: whole ms from 0 to an hour (absent = 0). @throws InvalidAsk naming it. */
function grace(v: unknown): number {
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3_600_000)
    throw new InvalidAsk(
      `disconnect_grace_ms: must be a whole number of ms from 0 to 3600000 (got ${JSON.stringify(v)})`,
      'disconnect_grace_ms',
    );
  return v;
}

/** `v` when it is a finite number > 0; else InvalidAsk naming `field`. */
export function positive(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw new InvalidAsk(`${field}: must be a number of ms > 0 (got ${JSON.stringify(v)})`, field);
  return v;
}
