/**
 * The `berth serve --config FILE` file (YAML, issue 12; SPEC V1): every serve option under its flag's name in
 * snake_case, plus `provisioners:`, `priority_classes:` (SPEC Q1) and `tenants:` (SPEC Q3). Values go through the
 * same zod schemas as flags; each error names the file, the line, the key and the value. Unknown keys are errors.
 */
import { readFileSync } from 'node:fs';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type * as z from 'zod';
import { valueAt } from '../errors.js';
import { cannotRead, issueText, OptionsError } from './fields.js';
import type { PriorityClasses } from '../placement/priority.js';
import { priorityClassesSchema, priorityClassObject, toPriorityClasses } from './priority-options.js';
import type { TenantQuotas } from '../placement/quota.js';
import { tenantObject, tenantsSchema, toTenantQuotas } from './tenant-options.js';
import { provisionerObject, provisionersSchema, shapeSchema, type ProvisionerConfig } from './provisioner-options.js';

/** Values read from the file, by option key, with the name each is reported under (`cfg.yaml line 3: cpus`). */
export interface ConfigFileValues {
  values: Record<string, unknown>;
  names: Record<string, string>;
  provisioners: ProvisionerConfig[];
  /** `priority_classes:` (SPEC Q1); {} without it. */
  priorityClasses: PriorityClasses;
  /** `tenants:` (SPEC Q3); {} without it. */
  tenants: TenantQuotas;
}

/**
 * Reads and checks `path`. `optionKeys` are the option keys (camelCase) the file may set.
 * @throws OptionsError `--config: cannot read '<file>': no such file`, a YAML syntax error with
 *   its line, `<file> line N: <key>: unknown key`, or a bad provisioner value naming key and value.
 */
export function readConfigFile(path: string, optionKeys: readonly string[]): ConfigFileValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new OptionsError(`--config: ${cannotRead(path, e)}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number | undefined) => `${path} line ${offset === undefined ? '?' : lines.linePos(offset).line}`;
  if (doc.errors.length) {
    const e = doc.errors[0];
    throw new OptionsError(`${at(e.pos[0])}: ${e.message.split('\n')[0]}`);
  }
  const out: ConfigFileValues = { values: {}, names: {}, provisioners: [], priorityClasses: {}, tenants: {} };
  if (doc.contents === null) return out;
  if (!isMap(doc.contents)) {
    throw new OptionsError(`${at(doc.contents.range?.[0])}: the file must be a mapping of option: value`);
  }
  const all = doc.toJS() as Record<string, unknown>;
  const allowed = new Map(optionKeys.map((k) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), k]));
  for (const pair of doc.contents.items) {
    const keyNode = pair.key;
    const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
    const line = at(isScalar(keyNode) ? keyNode.range?.[0] : undefined);
    const value = all[key];
    if (key === 'provisioners') {
      out.provisioners = parseSection(doc, 'provisioners', provisionersSchema, value ?? [], at);
    } else if (key === 'priority_classes') {
      out.priorityClasses = toPriorityClasses(parseSection(doc, key, priorityClassesSchema, value ?? {}, at));
    } else if (key === 'tenants') {
      out.tenants = toTenantQuotas(parseSection(doc, key, tenantsSchema, value ?? {}, at));
    } else if (allowed.has(key)) {
      const optionKey = allowed.get(key)!;
      out.values[optionKey] = asFlagValue(optionKey, value, `${line}: ${key}`);
      out.names[optionKey] = `${line}: ${key}`;
    } else {
      const known = [...allowed.keys(), 'provisioners', 'priority_classes', 'tenants'].join(', ');
      throw new OptionsError(`${line}: ${key}: unknown key (known: ${known})`);
    }
  }
  return out;
}

/**
 * File values the flag schemas take as strings: a list of labels or device ids → `a,b`.
 * @throws OptionsError for a bare number as `gpus`: it reads as a count (as in a shape) but would be one device id.
 */
function asFlagValue(key: string, v: unknown, where: string): unknown {
  if (Array.isArray(v)) return v.join(',');
  // a mapping of named quantities (`resources: {trainer: 1}`, `pools: {license/matlab: 30}`, issue 23) → `k=v,…`
  if (v !== null && typeof v === 'object')
    return Object.entries(v)
      .map(([k, q]) => `${k}=${q}`)
      .join(',');
  if (key === 'gpus' && typeof v === 'number') {
    throw new OptionsError(
      `${where}: device ids, not a count: write a list or a range, e.g. [0, 1] or '0-3', ` +
        `or '${v}-${v}' for the one GPU with id ${v} (got ${v})`,
    );
  }
  return v;
}

/**
 * Validates a section (`provisioners:`, `priority_classes:`) with `schema`; the first issue becomes an OptionsError
 * naming the line, the key path and the value.
 */
function parseSection<S extends z.ZodType>(
  doc: Document,
  section: string,
  schema: S,
  value: unknown,
  at: (offset?: number) => string,
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0] as z.core.$ZodIssue & { keys?: string[] };
  const path = [section, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
  // ['provisioners', 0, 'shapes'] → provisioners[0].shapes
  const label = (p: (string | number)[]) =>
    p.map((x, i) => (typeof x === 'number' ? `[${x}]` : i ? `.${x}` : x)).join('');
  if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
    const key = issue.keys[0];
    const node = doc.getIn(path, true);
    const pair = isMap(node) ? node.items.find((p) => isScalar(p.key) && p.key.value === key) : undefined;
    const offset = pair && isScalar(pair.key) ? pair.key.range?.[0] : undefined;
    const inShape = typeof path[path.length - 1] === 'number' && path[path.length - 2] === 'shapes';
    const keysOf =
      section === 'priority_classes'
        ? priorityClassObject
        : section === 'tenants'
          ? tenantObject
          : inShape
            ? shapeSchema
            : provisionerObject;
    const known = Object.keys(keysOf.shape).join(', ');
    throw new OptionsError(`${at(offset)}: ${label([...path, key])}: unknown key (known: ${known})`);
  }
  let node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined;
  for (let n = path.length - 1; !node?.range && n > 0; n--) node = doc.getIn(path.slice(0, n), true) as typeof node;
  if (issue.code === 'invalid_key') {
    // a bad mapping key (a class name): the key is the value, the key's own rule the message
    const key = path[path.length - 1];
    const why = issue.issues[0]?.message ?? issue.message;
    throw new OptionsError(`${at(node?.range?.[0])}: ${label(path)}: ${why} (got ${JSON.stringify(String(key))})`);
  }
  const got = valueAt(value, issue.path);
  // JSON has no infinity nor NaN (YAML's .inf, .nan): shown as themselves, not null
  const text = typeof got === 'number' && !Number.isFinite(got) ? String(got) : JSON.stringify(got);
  const shown = got === undefined ? '' : ` (got ${text})`;
  throw new OptionsError(`${at(node?.range?.[0])}: ${label(path)}: ${issueText(issue, got)}${shown}`);
}
