/**
 * Size limits of what a task sends back, so one node can never produce a frame that gRPC refuses
 * (which would drop the worker's whole stream and fail every call on it): a result larger than
 * MAX_RESULT_BYTES becomes a `ResultTooLarge` failure; failure texts are cut to
 * MAX_FAILURE_TEXT_BYTES; a metric with an unacceptable name becomes a stderr line. Output lines are cut by the
 * LineSplitter (MAX_LINE_BYTES, lines.ts).
 */
import { Result } from '../../../generated/ts/berth/v1/calls.js';
import { clipText } from './lines.js';
import type { ExecEvent, Outcome } from './types.js';

/**
 * Largest result, in bytes of its protobuf encoding (about its JSON size). 4 MB (decimal), so a
 * Run response carrying it stays under every gRPC client's default 4 MiB receive limit.
 */
export const MAX_RESULT_BYTES = 4_000_000;
/**
 * Largest gRPC message the server receives (`grpc.max_receive_message_length`), 16 MiB: a Run
 * request with big kwargs up to that size works; larger ones fail RESOURCE_EXHAUSTED alone.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/**
 * Largest message the agent sends and receives, 32 MiB: twice the server's, so the Call frame built
 * from any Run request the server accepted always reaches the agent.
 */
export const AGENT_MAX_MESSAGE_BYTES = 2 * MAX_MESSAGE_BYTES;
/** Longest failure message and traceback, in UTF-8 bytes (each); longer ones are cut with a marker. */
export const MAX_FAILURE_TEXT_BYTES = 256 * 1024;

/** Longest metric name and failure type, in characters (what the server accepts in a frame). */
export const MAX_NAME_CHARS = 256;

/**
 * `e` made safe to send: a metric whose name is empty or longer than MAX_NAME_CHARS would be a
 * frame the server refuses (ending the worker's stream), so it becomes a stderr line saying why.
 */
export function limitEvent(e: ExecEvent): ExecEvent {
  if (e.kind !== 'metric' || (e.name.length >= 1 && e.name.length <= MAX_NAME_CHARS)) return e;
  const why = e.name ? `its name is longer than ${MAX_NAME_CHARS} characters` : 'its name is empty';
  return {
    kind: 'log',
    stream: 'stderr',
    line: `berth: metric dropped (${why}): ${JSON.stringify(e.name.slice(0, 80))} = ${e.value}`,
  };
}

/** Bytes `value` takes on the wire as a Result's value (protobuf encoding). */
export function resultBytes(value: unknown): number {
  return Result.encode({ callId: '', value }).finish().length;
}

/**
 * `o` made safe to send: a result over `maxResult` bytes becomes a `ResultTooLarge` failure
 * giving its size and the limit; a failure's message and traceback are cut to MAX_FAILURE_TEXT_BYTES.
 */
export function limitOutcome(o: Outcome, maxResult = MAX_RESULT_BYTES): Outcome {
  if (o.ok) {
    let size: number;
    try {
      size = resultBytes(o.value);
    } catch (err) {
      return {
        ok: false,
        type: 'ResultNotEncodable',
        message: `the result cannot be encoded: ${(err as Error).message}`,
        traceback: '',
      };
    }
    if (size <= maxResult) return o;
    return {
      ok: false,
      type: 'ResultTooLarge',
      message:
        `the result is ${size} bytes encoded, more than the limit of ${maxResult} bytes; ` +
        `return a smaller value (write big data to a file and return its path)`,
      traceback: '',
    };
  }
  return {
    ...o,
    type: o.type.slice(0, MAX_NAME_CHARS) || 'Error',
    message: clipText(o.message, MAX_FAILURE_TEXT_BYTES),
    traceback: clipText(o.traceback, MAX_FAILURE_TEXT_BYTES),
  };
}
