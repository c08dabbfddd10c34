/**
 * Conversions between the wire (berth.v1 Call payloads, Events, Results, Failures) and the
 * executors' Task/ExecEvent/Outcome. Validates payloads with zod (SPEC R1).
 */
import * as z from 'zod';
import type { Command, Event, Failure, PythonSource, Result } from '../../generated/ts/berth/v1/calls.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError, valueAt } from '../errors.js';
import { ALLOCATION_ENV_KEYS } from '../placement/env.js';
import type { ExecEvent, ExecFailure, Outcome, Task } from './executors/types.js';

/** A payload as generated code holds it. */
export type WirePayload = { $case: 'command'; value: Command } | { $case: 'source'; value: PythonSource } | undefined;

const noNul = (what: string) => z.string().refine((v) => !v.includes('\0'), `${what} may not contain a NUL byte`);
/** Most command env variables, and their names + values in bytes (the Call frame stays small). */
export const MAX_COMMAND_ENV_KEYS = 1024;
export const MAX_COMMAND_ENV_BYTES = 1 << 20;
const commandSchema = z.object({
  argv: z.array(noNul('an argument')).min(1, 'must name a program').max(65_536, 'at most 65536 arguments'),
  env: z
    .record(
      noNul('a variable name')
        .refine((k) => k.length > 0 && !k.includes('='), 'a variable name may not be empty or contain =')
        .refine(
          (k) => !ALLOCATION_ENV_KEYS.includes(k),
          'is set by berth from the allocation (SPEC R8): a command cannot set it',
        ),
      noNul('a value'),
    )
    .refine((e) => Object.keys(e).length <= MAX_COMMAND_ENV_KEYS, `at most ${MAX_COMMAND_ENV_KEYS} variables`)
    .refine(
      (e) =>
        Object.entries(e).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0) <=
        MAX_COMMAND_ENV_BYTES,
      `at most ${MAX_COMMAND_ENV_BYTES} bytes of names and values in all`,
    ),
  cwd: noNul('cwd').refine((v) => v.length <= 4096, 'at most 4096 characters'),
});
const sourceSchema = z.object({
  source: z.string().min(1, 'must not be empty'),
  kwargs: z
    .record(z.string(), z.unknown())
    .superRefine((kwargs, ctx) => {
      const at = nonFinite(kwargs, []);
      if (at)
        ctx.addIssue({ code: 'custom', path: at, message: 'must be a finite number (JSON has no NaN or Infinity)' });
    })
    .optional(),
});

/**
 * The path to the first NaN or ±Infinity inside a Struct's value (issue 24 item 8): JSON, which the
 * node receives, has neither, so it would reach the node as None. Undefined when there is none.
 */
function nonFinite(v: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : path;
  if (typeof v !== 'object' || v === null) return undefined;
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  for (const [k, child] of entries) {
    const hit = nonFinite(child, [...path, k]);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * Builds the Task of call `callId` with `allocation`'s device ids and env.
 * @throws BerthError invalid_argument naming `field` (e.g. `command.argv`) when the payload is missing or bad.
 */
export function toTask(
  callId: string,
  allocation: Allocation | undefined,
  payload: WirePayload,
  field = 'payload',
): Task {
  const base = { callId, gpuIds: allocation?.gpuIds ?? [], env: allocation?.env ?? {} };
  if (!payload) throw new BerthError('invalid_argument', `${field}: a command or a source is required`);
  if (!validated.has(payload.value)) check(payload);
  if (payload.$case === 'command') {
    const c = payload.value;
    return { ...base, payload: { kind: 'command', argv: c.argv, env: c.env, cwd: c.cwd } };
  }
  return { ...base, payload: { kind: 'source', source: payload.value.source, kwargs: payload.value.kwargs ?? {} } };
}

/**
 * Payload bodies that passed their schema. A Run's payload is checked before anything is claimed
 * and built into a Task again when its call starts: the second time skips the schema (issue 11).
 */
const validated = new WeakSet<object>();

/** Validates `payload` against its schema and remembers it as valid; throws INVALID_ARGUMENT naming the field. */
function check(payload: NonNullable<WirePayload>): void {
  const schema = payload.$case === 'command' ? commandSchema : sourceSchema;
  const r = schema.safeParse(payload.value);
  if (!r.success) {
    const issue = r.error.issues[0];
    const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    let value = valueAt(payload.value, issue.path);
    if (issue.code === 'invalid_key') value = issue.path[issue.path.length - 1];
    const shown =
      issue.path.length === 1 && issue.path[0] === 'env'
        ? ''
        : ` (got ${(typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? 'nothing')).slice(0, 120)})`;
    throw new BerthError('invalid_argument', `${payload.$case}.${issue.path.join('.')}: ${message}${shown}`);
  }
  validated.add(payload.value);
}

/** The wire Event of an executor event. */
export function toEvent(callId: string, e: ExecEvent): Event {
  return e.kind === 'metric'
    ? { callId, kind: { $case: 'metric', value: { name: e.name, value: e.value } }, seq: 0 }
    : { callId, kind: { $case: 'log', value: { stream: e.stream, line: e.line } }, seq: 0 };
}

/** The terminal frame of an outcome: a Result, or a Failure keeping class, message and traceback. */
export function toTerminal(
  callId: string,
  o: Outcome,
): { $case: 'result'; value: Result } | { $case: 'failure'; value: Failure } {
  if (o.ok) return { $case: 'result', value: { callId, value: o.value } };
  return { $case: 'failure', value: toFailure(callId, o) };
}

/** A wire Failure. */
export function toFailure(callId: string, f: ExecFailure): Failure {
  return { callId, type: f.type, message: f.message, traceback: f.traceback };
}
