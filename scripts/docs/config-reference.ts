/**
 * docs/reference/config.md from the config file's own reader and schemas: the keys
 * `readConfigFile` accepts (asked of the reader itself, through its "unknown key (known: …)"
 * error), each serve option with its flag's help text and its zod schema, and `provisioners:`
 * with every key of provisionerObject and shapeSchema and the words given with `.describe()`.
 * A key the reader accepts that this page cannot describe is an error, not a silent gap.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as z from 'zod';
import { COMMANDS } from '../../src/cli/commands.js';
import { readConfigFile } from '../../src/config/config-file.js';
import { priorityClassObject } from '../../src/config/priority-options.js';
import { tenantObject } from '../../src/config/tenant-options.js';
import { provisionerObject, shapeSchema } from '../../src/config/provisioner-options.js';
import { SERVE_FLAGS, serveSchema } from '../../src/config/serve-options.js';
import { defaultOf, meaningOf } from './cli-reference.js';
import { GENERATED_NOTE, table } from './markdown.js';
import { descriptionOf, isRequired, schemaDefault, valueWords } from './values.js';

/** Keys the file may set besides the serve options, each with the section that documents it. */
const SECTIONS: Record<string, [string, string]> = {
  provisioners: ['list of provisioners', '`[]`'],
  priority_classes: ['mapping of class name → class', '`{}`'],
  tenants: ['mapping of client identity → quota', '`{}`'],
};

/** The keys the config file reader accepts, as it lists them in its own error for an unknown key. */
export function acceptedKeys(): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'berth-docs-'));
  try {
    const probe = join(dir, 'probe.yaml');
    writeFileSync(probe, 'a_key_no_reader_knows: 1\n');
    readConfigFile(probe, Object.keys(SERVE_FLAGS));
  } catch (e) {
    const known = /\(known: ([^)]*)\)/.exec((e as Error).message)?.[1];
    if (known) return known.split(', ');
    throw e;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error('the config file reader accepted an unknown key: it no longer refuses them');
}

/** A table of an object schema's keys (`required`, value, default, meaning); every key needs `.describe()`. */
function schemaTable(what: string, schema: z.ZodObject, errors: string[]): string {
  const rows = Object.entries(schema.shape).map(([key, s]) => {
    const field = s as z.ZodType;
    const meaning = descriptionOf(field);
    if (!meaning) errors.push(`${what}.${key} has no .describe() in src/config/provisioner-options.ts`);
    return [
      `\`${key}\``,
      isRequired(field) ? 'yes' : '',
      valueWords(field) ?? '',
      schemaDefault(field) ?? '',
      meaning ?? '',
    ];
  });
  return table(['key', 'required', 'value', 'default', 'meaning'], rows);
}

/** The whole of docs/reference/config.md. @throws Error listing every key it cannot describe. */
export async function configReference(): Promise<string> {
  const errors: string[] = [];
  const serve = await COMMANDS.serve.load();
  const byKey = new Map(Object.entries(SERVE_FLAGS).map(([key, [flag]]) => [snake(key), { key, flag }]));
  const rows: string[][] = [];
  for (const fileKey of acceptedKeys()) {
    const option = byKey.get(fileKey);
    if (option) {
      const o = serve.options.find((x) => x.long === option.flag);
      const field = serveSchema.shape[option.key as keyof typeof serveSchema.shape] as z.ZodType;
      if (!o) {
        errors.push(
          `config key ${fileKey}: no option ${option.flag} on berth serve (src/cli/serve.ts), so no help text to show`,
        );
      }
      const value = valueWords(field) ?? '';
      rows.push([`\`${fileKey}\``, value, o ? defaultOf(o, field) : '', `\`${option.flag}\``, o ? meaningOf(o) : '']);
    } else if (SECTIONS[fileKey]) {
      const [value, dflt] = SECTIONS[fileKey];
      rows.push([`\`${fileKey}\``, value, dflt, '', `see [below](#${fileKey})`]);
    } else {
      errors.push(`config key ${fileKey} is accepted by src/config/config-file.ts but not described by scripts/docs`);
    }
  }
  const parts = [
    GENERATED_NOTE,
    '# Config file reference',
    '',
    '`berth serve --config FILE` (or `BERTH_CONFIG`) reads a YAML mapping. Every key is listed here, read from',
    "the file's own reader (`src/config/config-file.ts`) and schemas (`src/config/`); any other key is an error",
    "naming the file, the line and the key. A serve option is written under its flag's name in snake_case and",
    'checked like the flag; a flag or its environment variable wins over the file. Where the flag takes a',
    'comma-separated value (labels, GPU ids), the file may give a YAML list instead; `gpus` is device ids',
    "(`[0, 1]` or `'0-3'`), and a bare number there is refused because a shape's `gpus` is a count.",
    '',
    '## Top-level keys',
    '',
    table(['key', 'value', 'default', 'flag', 'meaning'], rows),
    '',
    '<a id="provisioners"></a>',
    '',
    '## `provisioners:`',
    '',
    'A list; each entry starts machines of the shapes it lists when claims wait that no attached machine can',
    'hold. Names are unique. Guide: [provisioners](../guide-provisioners.md), design:',
    '[provisioners.md](../provisioners.md).',
    '',
    schemaTable('provisioners[]', provisionerObject, errors),
    '',
    '### A shape (`provisioners[].shapes[]`)',
    '',
    schemaTable('shapes[]', shapeSchema, errors),
    '',
    '<a id="priority_classes"></a>',
    '',
    '## `priority_classes:`',
    '',
    'A mapping of class name (a letter, then letters, digits, `_` and `-`; at most 63) to a class. An ask naming',
    '`priority_class` takes its value; asks naming neither a priority nor a class take the default class. Re-read on',
    'SIGHUP, all or nothing. Guide: [priorities](../priorities.md), rule [Q1](../rules.md#q1).',
    '',
    schemaTable('priority_classes.<name>', priorityClassObject, errors),
    '',
    '<a id="tenants"></a>',
    '',
    '## `tenants:`',
    '',
    'A mapping of client identity (a `--client-tokens` name or a certificate name) to its quota and its weight in',
    'fair sharing. Each amount is a mapping of resource (`cpus`, `gpus`, `ram_mb`, a named resource or a pool) to a',
    'number. Re-read on SIGHUP with `priority_classes:`, all or nothing. Guide: [quotas](../priorities.md#quotas),',
    '[fair sharing](../priorities.md#fair-sharing), rules [Q1](../rules.md#q1), [Q3](../rules.md#q3).',
    '',
    schemaTable('tenants.<name>', tenantObject, errors),
  ];
  if (errors.length) throw new Error(`the config reference cannot be written:\n  ${errors.join('\n  ')}`);
  return `${parts.join('\n')}\n`;
}

/** `ramMb` → `ram_mb`, as the reader maps option keys to file keys. */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
