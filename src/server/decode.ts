/**
 * Undecodable request bodies (SPEC R1): grpc-js answers a throwing deserializer with INTERNAL
 * "Error deserializing request". The service definitions served use a deserializer that never
 * throws; it hands the edge an Undecodable marker instead, which the edge answers INVALID_ARGUMENT.
 */
import type { ServiceDefinition } from '@grpc/grpc-js';

const MARK = Symbol('undecodable');

/** What a request decodes to when its bytes are not a valid message; `why` is the decoder's message. */
export interface Undecodable {
  [MARK]: true;
  why: string;
}

/** True for the marker of an undecodable body. */
export function isUndecodable(v: unknown): v is Undecodable {
  return typeof v === 'object' && v !== null && MARK in v;
}

/** `definition` with every request deserializer wrapped so that a decoding error becomes an Undecodable. */
export function tolerantDecoding<D extends ServiceDefinition>(definition: D): D {
  const out: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(definition)) {
    out[name] = {
      ...m,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return m.requestDeserialize(bytes);
        } catch (err) {
          return { [MARK]: true, why: String((err as Error)?.message ?? err).slice(0, 200) } satisfies Undecodable;
        }
      },
    };
  }
  return out as D;
}
