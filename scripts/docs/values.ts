/**
 * What an option's zod schema accepts and defaults to, in the words of the generated reference:
 * the shared field schemas of src/config/fields.ts by name ("host:port", "device range"), the rest
 * from zod's own JSON Schema of the input (whole numbers with their bounds, enums, seconds).
 */
import * as z from 'zod';
import {
  address,
  deviceRange,
  labelList,
  logLevel,
  plainName,
  positiveSeconds,
  readableFile,
  seconds,
  serverList,
} from '../../src/config/fields.js';

/** The shared field schemas, each with the words the reference uses for it. */
const NAMED: [z.ZodType, string][] = [
  [address, '`host:port`'],
  [serverList, '`host:port`, or several comma-separated (an HA cluster)'],
  [deviceRange, "device range: `0-3`, `0,2,5`, `''` for none"],
  [labelList, 'labels, comma-separated (`a,b`)'],
  [logLevel, 'fatal, error, warn, info, debug, trace or silent (any case)'],
  [plainName, 'name: letters, digits, `_ . -`'],
  [seconds, 'seconds ≥ 0 (decimals allowed)'],
  [positiveSeconds, 'seconds > 0 (decimals allowed)'],
  [readableFile, 'path of a readable file'],
];

/** `s` without its `.optional()` / `.default()` / `.nullable()` wrappers. */
export function unwrap(s: z.ZodType): z.ZodType {
  let cur = s;
  for (;;) {
    const def = cur.def as { type: string; innerType?: z.ZodType };
    if (!['optional', 'default', 'nullable', 'prefault'].includes(def.type) || !def.innerType) return cur;
    cur = def.innerType;
  }
}

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  items?: JsonSchema;
  pattern?: string;
}

/** One JSON Schema node in words, or undefined when it says nothing useful (any, a bare string). */
function jsonWords(j: JsonSchema): string | undefined {
  if (j.enum) return j.enum.map((v) => `\`${String(v)}\``).join(' or ');
  if (j.type === 'integer') {
    if (j.minimum !== undefined && j.maximum !== undefined) return `whole number ${j.minimum}–${j.maximum}`;
    if (j.minimum !== undefined) return `whole number ≥ ${j.minimum}`;
    return 'whole number';
  }
  if (j.type === 'number') {
    if (j.exclusiveMinimum !== undefined) return `number > ${j.exclusiveMinimum}`;
    return j.minimum !== undefined ? `number ≥ ${j.minimum}` : 'number';
  }
  if (j.type === 'boolean') return '`true` or `false`';
  if (j.type === 'array') {
    const item = j.items ? jsonWords(j.items) : undefined;
    const least = j.minItems ? `, at least ${j.minItems}` : '';
    return item ? `list of ${item}${least}` : `list${least}`;
  }
  if (j.type === 'string' && j.pattern === '^[A-Za-z0-9_.-]+$') return 'name: letters, digits, `_ . -`';
  if (j.type === 'string') return j.minLength ? 'text, not empty' : 'text';
  return undefined;
}

/** What `s` accepts, in words; undefined when the schema cannot say (the caller falls back to the flag's `<arg>`). */
export function valueWords(s: z.ZodType): string | undefined {
  const inner = unwrap(s);
  const named = NAMED.find(([schema]) => schema === inner);
  if (named) return named[1];
  if (inner.def.type === 'array') {
    const element = (inner.def as unknown as { element: z.ZodType }).element;
    const item = valueWords(element);
    const least = (toJson(inner).minItems ?? 0) > 0 ? `, at least ${toJson(inner).minItems}` : '';
    return `list of ${item ?? 'values'}${least}`;
  }
  if (inner.def.type === 'object') return 'mappings (see below)';
  return jsonWords(toJson(inner));
}

function toJson(s: z.ZodType): JsonSchema {
  return z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** The schema's own default, shown as the reference shows values; undefined for none, `false`, `[]` or ''. */
export function schemaDefault(s: z.ZodType): string | undefined {
  let cur = s;
  for (;;) {
    const def = cur.def as { type: string; innerType?: z.ZodType; defaultValue?: unknown };
    if (def.type === 'default') {
      const v = def.defaultValue;
      if (v === false || v === '' || (Array.isArray(v) && v.length === 0)) return undefined;
      return `\`${typeof v === 'string' ? v : JSON.stringify(v)}\``;
    }
    if (!def.innerType) return undefined;
    cur = def.innerType;
  }
}

/** True when `s` must be given (not optional and without a default). */
export function isRequired(s: z.ZodType): boolean {
  let cur = s;
  for (;;) {
    const def = cur.def as { type: string; innerType?: z.ZodType };
    if (def.type === 'optional' || def.type === 'default') return false;
    if (!def.innerType) return true;
    cur = def.innerType;
  }
}

/** The description given with `.describe()` on `s` or a wrapper of it. */
export function descriptionOf(s: z.ZodType): string | undefined {
  let cur: z.ZodType | undefined = s;
  while (cur) {
    if (cur.description) return cur.description;
    cur = (cur.def as { innerType?: z.ZodType }).innerType;
  }
  return undefined;
}
