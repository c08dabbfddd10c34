/**
 * Undecodable request bodies (SPEC R1): grpc-js answers a throwing deserializer with INTERNAL
 * "Error deserializing request". The service definitions served use a deserializer that never
 * throws; it hands the edge an Undecodable marker instead, which the edge answers INVALID_ARGUMENT.
 *
 * The generated decoders are lenient where the wire format is not (issue 24 item 8): they stop
 * silently at a zero tag or a stray end-group, skip field number 0, and put U+FFFD in place of
 * invalid UTF-8. A body is undecodable here when its top level is not a sequence of well-formed
 * fields to its last byte, when the decoder stops before the end, or when a string is not UTF-8
 * (proto3 requires it). Unknown but well-formed fields stay accepted (a newer client's field).
 */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { BinaryReader } from '@bufbuild/protobuf/wire';

const MARK = Symbol('undecodable');

/** What a request decodes to when its bytes are not a valid message; `why` is the decoder's message. */
export interface Undecodable {
  [MARK]: true;
  why: string;
  /** The snake_case path of the field at fault (e.g. `ask.node`) when it is known. */
  field?: string;
}

/** True for the marker of an undecodable body. */
export function isUndecodable(v: unknown): v is Undecodable {
  return typeof v === 'object' && v !== null && MARK in v;
}

const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** A UTF-8 decoder that throws on invalid input whatever the generated code asks for. */
const strictUtf8 = (bytes: Uint8Array): string => fatal.decode(bytes);
const NOT_UTF8 = 'not valid UTF-8 (a protobuf string must be)';

/** `definition` with every request deserializer wrapped so that a decoding error becomes an Undecodable. */
export function tolerantDecoding<D extends ServiceDefinition>(definition: D): D {
  const out: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(definition)) {
    out[name] = { ...m, requestDeserialize: (bytes: Buffer) => strictDecode(bytes, m.requestDeserialize) };
  }
  return out as D;
}

/**
 * Decodes `bytes` with the generated `decode` (which takes a BinaryReader as well as bytes), strictly:
 * returns an Undecodable for a malformed top level, a decoder stopping early or invalid UTF-8.
 */
export function strictDecode<T>(bytes: Buffer, decode: (b: Buffer) => T): T | Undecodable {
  const malformed = topLevelFault(bytes);
  if (malformed) return undecodable(malformed);
  const reader = new BinaryReader(bytes, strictUtf8);
  try {
    const message = decode(reader as unknown as Buffer);
    if (reader.pos !== reader.len)
      return undecodable(
        `the decoder stopped at byte ${reader.pos} of ${reader.len} (a zero tag or a stray end group)`,
      );
    return message;
  } catch (err) {
    if (err instanceof TypeError && /utf-?8/i.test(err.message)) {
      let lenient: unknown;
      try {
        lenient = decode(bytes);
      } catch {
        return undecodable(`a string field is ${NOT_UTF8}`);
      }
      const field = replacedString(lenient, []);
      return field ? { [MARK]: true, why: NOT_UTF8, field } : undecodable(`a string field is ${NOT_UTF8}`);
    }
    return undecodable(String((err as Error)?.message ?? err));
  }
}

function undecodable(why: string): Undecodable {
  return { [MARK]: true, why: why.slice(0, 200) };
}

/** Why the top level of `bytes` is not a sequence of well-formed fields ending at its last byte, or undefined. */
function topLevelFault(bytes: Buffer): string | undefined {
  const reader = new BinaryReader(bytes);
  try {
    while (reader.pos < reader.len) {
      const at = reader.pos;
      const [field, wireType] = reader.tag();
      if (wireType === 4) return `an end group without its start (field ${field} at byte ${at})`;
      reader.skip(wireType, field);
    }
    return undefined;
  } catch (err) {
    return String((err as Error)?.message ?? err);
  }
}

const isOneof = (v: unknown): v is { $case: string; value: unknown } =>
  typeof v === 'object' && v !== null && typeof (v as { $case?: unknown }).$case === 'string' && 'value' in v;
const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The path of the first string in a leniently decoded message that holds U+FFFD (where invalid
 * UTF-8 was replaced), in proto field names: a oneof `{ $case, value }` is named by its case.
 */
function replacedString(v: unknown, path: string[]): string | undefined {
  if (typeof v === 'string') return v.includes('\uFFFD') ? path.join('.') || 'request' : undefined;
  if (typeof v !== 'object' || v === null || v instanceof Uint8Array) return undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const hit = replacedString(v[i], [...path, String(i)]);
      if (hit) return hit;
    }
    return undefined;
  }
  const o = v as Record<string, unknown>;
  if (isOneof(o)) return replacedString(o.value, [...path, snake(o.$case)]);
  for (const [k, child] of Object.entries(o)) {
    if (k.includes('\uFFFD')) return [...path, snake(k)].join('.'); // a map key
    // A oneof's own name is no field on the wire: its case names the field.
    const hit = replacedString(child, isOneof(child) ? path : [...path, snake(k)]);
    if (hit) return hit;
  }
  return undefined;
}
