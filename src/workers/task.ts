/**
 * Conversions between the wire (berth.v1 Call payloads, Events, Results, Failures) and the
 * executors' Task/ExecEvent/Outcome. Validates payloads with zod (SPEC R1).
 */
import { z } from 'zod';
import type { Command, Event, Failure, PythonSource, Result } from '../../generated/ts/berth/v1/calls.js';
import type { Allocation } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../errors.js';
import type { ExecEvent, ExecFailure, Outcome, Task } from './executors/types.js';

/** A payload as generated code holds it. */
export type WirePayload = { $case: 'command'; value: Command } | { $case: 'source'; value: PythonSource } | undefined;

const commandSchema = z.object({
  argv: z.array(z.string()).min(1, 'must name a program'),
  env: z.record(z.string(), z.string()),
  cwd: z.string(),
});
const sourceSchema = z.object({
  source: z.string().min(1, 'must not be empty'),
  kwargs: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Builds the Task of call `callId` with `allocation`'s device ids and env.
 * @throws BerthError invalid_argument naming `field` (e.g. `command.argv`) when the payload is missing or bad.
 */
export function toTask(callId: string, allocation: Allocation | undefined, payload: WirePayload, field = 'payload'): Task {
  const base = { callId, gpuIds: allocation?.gpuIds ?? [], env: allocation?.env ?? {} };
  if (!payload) throw new BerthError('invalid_argument', `${field}: a command or a source is required`);
  const schema = payload.$case === 'command' ? commandSchema : sourceSchema;
  const r = schema.safeParse(payload.value);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new BerthError('invalid_argument', `${payload.$case}.${issue.path.join('.')}: ${issue.message}`);
  }
  if (payload.$case === 'command') {
    const c = payload.value;
    return { ...base, payload: { kind: 'command', argv: c.argv, env: c.env, cwd: c.cwd } };
  }
  return { ...base, payload: { kind: 'source', source: payload.value.source, kwargs: payload.value.kwargs ?? {} } };
}

/** The wire Event of an executor event. */
export function toEvent(callId: string, e: ExecEvent): Event {
  return e.kind === 'metric'
    ? { callId, kind: { $case: 'metric', value: { name: e.name, value: e.value } } }
    : { callId, kind: { $case: 'log', value: { stream: e.stream, line: e.line } } };
}

/** The terminal frame of an outcome: a Result, or a Failure keeping class, message and traceback. */
export function toTerminal(callId: string, o: Outcome): { $case: 'result'; value: Result } | { $case: 'failure'; value: Failure } {
  if (o.ok) return { $case: 'result', value: { callId, value: o.value } };
  return { $case: 'failure', value: toFailure(callId, o) };
}

/** A wire Failure. */
export function toFailure(callId: string, f: ExecFailure): Failure {
  return { callId, type: f.type, message: f.message, traceback: f.traceback };
}
