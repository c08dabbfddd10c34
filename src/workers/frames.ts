/**
 * Validation of a worker's frames after Hello (SPEC R1): ids present, bounded sizes, finite
 * metric values. A bad frame ends the stream with INVALID_ARGUMENT naming the field.
 */
import * as z from 'zod';
import type { WorkerStreamRequest } from '../../generated/ts/berth/v1/worker.js';
import { BerthError, valueAt } from '../errors.js';

const callId = z.string().min(1, 'required').max(512, 'at most 512 characters');
const failure = z.object({
  callId: z.string().max(512),
  type: z.string().max(256),
  message: z.string().max(1 << 20),
  traceback: z.string().max(1 << 20),
});

const schemas: Record<string, z.ZodType> = {
  heartbeat: z.object({ callId: z.string().max(512) }),
  event: z.object({
    callId,
    kind: z.discriminatedUnion(
      '$case',
      [
        z.object({
          $case: z.literal('metric'),
          value: z.object({
            name: z.string().min(1, 'required').max(256),
            value: z.number({ error: 'must be a finite number' }).refine(Number.isFinite, 'must be a finite number'),
          }),
        }),
        z.object({
          $case: z.literal('log'),
          value: z.object({ stream: z.enum(['stdout', 'stderr']), line: z.string().max(1 << 20) }),
        }),
        z.object({
          $case: z.literal('logs'),
          value: z.object({
            stream: z.enum(['stdout', 'stderr']),
            lines: z
              .array(z.string().max(1 << 20))
              .min(1, 'at least one line')
              .max(100_000),
          }),
        }),
      ],
      { error: 'a metric, a log line or log lines are required' },
    ),
  }),
  result: z.object({ callId, value: z.unknown() }),
  failure: failure.extend({ callId, type: z.string().min(1, 'required').max(256) }),
  stopping: z.object({ reason: z.string().max(4096, 'at most 4096 characters') }),
  compileResult: z.object({ requestId: z.string().min(1, 'required'), ok: z.boolean(), failure: failure.optional() }),
};

/**
 * Checks one frame from an attached worker.
 * @throws BerthError invalid_argument naming `<frame>.<field>` and the value.
 */
export function checkFrame(frame: WorkerStreamRequest['frame']): void {
  if (!frame) throw new BerthError('invalid_argument', 'frame: empty frame');
  const schema = schemas[frame.$case];
  if (!schema) return;
  const r = schema.safeParse(frame.value);
  if (r.success) return;
  const issue = r.error.issues[0];
  const value = valueAt(frame.value, issue.path);
  const shown = JSON.stringify(value)?.slice(0, 80);
  throw new BerthError(
    'invalid_argument',
    `${fieldPath([frame.$case, ...issue.path])}: ${issue.message} (got ${shown})`,
  );
}

/** A field path as the proto spells it: ['event', 'callId'] → `event.call_id`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((k) => String(k).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)).join('.');
}
