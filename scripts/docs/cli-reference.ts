/**
 * docs/reference/cli.md from the CLI's own definitions: each command's commander options (flags,
 * help text, defaults) joined with the option tables and zod schemas of src/config/ (environment
 * variables, accepted values). Where the two disagree — a help text naming another variable than
 * the one the resolver reads, a table entry without its flag — it throws instead of writing a
 * reference that would mislead.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import type * as z from 'zod';
import { CLIENT_FLAGS, clientSchema } from '../../src/cli/client.js';
import { COMMANDS } from '../../src/cli/commands.js';
import { DISPATCH_FLAGS, dispatchSchema } from '../../src/config/dispatch-options.js';
import { SERVE_FLAGS, serveSchema } from '../../src/config/serve-options.js';
import { WORKER_FLAGS, workerSchema } from '../../src/config/worker-options.js';
import { GENERATED_NOTE, table } from './markdown.js';
import { schemaDefault, valueWords } from './values.js';

/** Where a command's options are resolved: option key → [flag, env] (env '' when flags only) and the schema. */
interface Source {
  table: Record<string, readonly [string, string]>;
  schema: z.ZodObject;
}

const CLIENT: Source = { table: CLIENT_FLAGS, schema: clientSchema };
const NO_ENV = (t: Record<string, string>) =>
  Object.fromEntries(Object.entries(t).map(([k, flag]) => [k, [flag, ''] as const]));

/** The sources of each command, first match wins; a command not listed dials berth like `status` does. */
const SOURCES: Record<string, Source[]> = {
  serve: [{ table: SERVE_FLAGS, schema: serveSchema }],
  worker: [{ table: WORKER_FLAGS, schema: workerSchema }],
  dispatch: [{ table: NO_ENV(DISPATCH_FLAGS), schema: dispatchSchema }, CLIENT],
  status: [CLIENT],
};

/**
 * Variables the code reads directly, not through an option table: each needs its words here
 * (the generator fails on one it finds in src/ without them).
 */
const OTHER_ENV: Record<string, string> = {
  BERTH_PYTHON:
    'the Python interpreter that runs `source` payloads, on the engine host and on workers (default `python3`)',
  BERTH_POOL_IDLE_MS:
    'milliseconds a warm Python process may stay idle before it is retired, whole ms ≥ 1 (default 60000)',
  BERTH_KEEPER_SECRET:
    'set by `berth serve` for the engine keeper it starts (a `berth worker` under the engine name); not for users',
  BERTH_GPU_SHARE:
    'set by berth in a claim whose ask took a share of one GPU (`gpu_share`), e.g. `0.25`; an ask may not set it',
};

const ENV_IN_HELP = /\s*\[env ([A-Z_]+)\]/;
const DEFAULT_IN_HELP = /\s*\(default:? ([^)]*)\)/;

interface Row {
  flag: string;
  env: string;
  default: string;
  value: string;
  meaning: string;
}

/** One option as a row, checked against its table entry; problems are pushed to `errors`. */
function optionRow(cmd: string, o: Option, sources: Source[], errors: string[]): Row {
  const key = o.attributeName();
  const source = sources.find((s) => key in s.table || key in s.schema.shape);
  const entry = source?.table[key];
  const helpEnv = ENV_IN_HELP.exec(o.description)?.[1] ?? '';
  if (entry?.[1] && helpEnv !== entry[1]) {
    errors.push(
      `berth ${cmd} ${o.long}: the help text names ${helpEnv || 'no variable'}, the resolver reads ${entry[1]}`,
    );
  }
  const field = source?.schema.shape[key] as z.ZodType | undefined;
  const argument = /<[^>]+>|\[[^\]]+\]/.exec(o.flags)?.[0];
  const value = o.isBoolean() ? '(no value)' : ((field && valueWords(field)) ?? `\`${argument}\``);
  return {
    flag: `\`${o.flags}\``,
    env: helpEnv ? `\`${helpEnv}\`` : '',
    default: defaultOf(o, field),
    value,
    meaning: meaningOf(o),
  };
}

/** An option's help text without its `[env X]` and `(default X)` parts. */
export function meaningOf(o: Option): string {
  return o.description.replace(ENV_IN_HELP, '').replace(DEFAULT_IN_HELP, '').trim();
}

/** An option's default: commander's, else the help text's `(default X)`, else the schema's; '' for none. */
export function defaultOf(o: Option, field: z.ZodType | undefined): string {
  const helpDefault = DEFAULT_IN_HELP.exec(o.description)?.[1];
  const given = o.defaultValue === undefined ? undefined : `\`${String(o.defaultValue)}\``;
  // A default in the help text is a literal (`10`) or words ("a new temp directory").
  const fromHelp = helpDefault === undefined ? undefined : /\s/.test(helpDefault) ? helpDefault : `\`${helpDefault}\``;
  return given ?? fromHelp ?? (field && schemaDefault(field)) ?? '';
}

/** Table entries with an environment variable but no flag: settings read from the environment only. */
function envOnly(cmd: Command, sources: Source[]): string[] {
  const longs = new Set(cmd.options.map((o) => o.long));
  const out: string[] = [];
  for (const s of sources) {
    for (const [key, [flag, env]] of Object.entries(s.table)) {
      if (env && !longs.has(flag) && !out.some((l) => l.includes(env))) {
        const field = s.schema.shape[key] as z.ZodType | undefined;
        out.push(`- \`${env}\` (${key}): ${(field && valueWords(field)) ?? 'text'}`);
      }
    }
  }
  return out;
}

/** Checks that every flag a table names is a flag of the command (a name-only table, e.g. dispatch's). */
function checkTables(name: string, cmd: Command, sources: Source[], errors: string[]): void {
  for (const s of sources) {
    for (const [key, [flag, env]] of Object.entries(s.table)) {
      if (env) continue; // an env-backed entry without a flag is an env-only setting
      const long = flag.split('/').pop();
      if (!cmd.options.some((o) => o.long === long))
        errors.push(`berth ${name}: ${key} (${flag}) has no commander option`);
    }
  }
}

/** The text a command adds after its options in `--help` (examples, file formats, exit codes); '' for none. */
function helpAfter(cmd: Command): string {
  let out = '';
  cmd.configureOutput({ writeOut: (s) => (out += s), getOutHelpWidth: () => 120 });
  cmd.outputHelp();
  const base = cmd.helpInformation();
  return out.startsWith(base) ? out.slice(base.length).trim() : '';
}

/** `BERTH_*` variables read as `env.BERTH_X` or `process.env.BERTH_X` anywhere under `dir`. */
function envReadIn(dir: string): Set<string> {
  const found = new Set<string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), 'utf8');
    for (const m of text.matchAll(/\benv(?:\.|\[')(BERTH_[A-Z0-9_]+)/g)) found.add(m[1]);
  }
  return found;
}

/** The whole of docs/reference/cli.md. @throws Error listing every disagreement found. */
export async function cliReference(root: string): Promise<string> {
  const errors: string[] = [];
  const documented = new Set<string>();
  const parts = [
    GENERATED_NOTE,
    '# CLI reference',
    '',
    "Every flag of every `berth` command, read from the commands' own definitions (`src/cli/`) and the option",
    'schemas that validate them (`src/config/`). A flag wins over its environment variable, which wins over the',
    'config file (`berth serve --config`, see [config.md](config.md)), which wins over the default; an empty',
    'variable counts as unset. A bad value exits 2 with a message naming the flag and the value.',
    '',
    '`berth --help` lists the commands, `berth <command> --help` (or `berth help <command>`) shows one, and',
    '`berth --version` prints the version. The guides explain what the flags do together:',
    '[serving](../guide-serving.md), [workers](../guide-workers.md), [dispatch](../guide-dispatch.md),',
    '[watching](../guide-watching.md).',
  ];
  for (const [name, entry] of Object.entries(COMMANDS)) {
    const cmd = await entry.load();
    const sources = SOURCES[name] ?? [CLIENT];
    const args = cmd.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`)).join(' ');
    const about = cmd.description().replace(/^./, (c) => c.toUpperCase());
    parts.push(
      '',
      `## berth ${name}`,
      '',
      `${about}.`,
      '',
      `Usage: \`berth ${name} [options]${args ? ` ${args}` : ''}\``,
    );
    for (const a of cmd.registeredArguments) parts.push('', `\`${a.name()}\`: ${a.description}.`);
    const rows = cmd.options.map((o) => optionRow(name, o, sources, errors));
    for (const r of rows) if (r.env) documented.add(r.env.replaceAll('`', ''));
    parts.push(
      '',
      table(
        ['flag', 'env', 'default', 'value', 'meaning'],
        rows.map((r) => [r.flag, r.env, r.default, r.value, r.meaning]),
      ),
    );
    const only = envOnly(cmd, sources);
    for (const l of only) documented.add(/`(BERTH_[A-Z_]+)`/.exec(l)![1]);
    if (only.length) parts.push('', 'Read from the environment only:', '', ...only);
    const after = helpAfter(cmd);
    if (after) parts.push('', `From \`berth ${name} --help\`:`, '', '```text', after, '```');
    checkTables(name, cmd, sources, errors);
  }
  const other = [...envReadIn(join(root, 'src'))].filter((e) => !documented.has(e)).sort();
  const missing = other.filter((e) => !OTHER_ENV[e]);
  for (const e of missing)
    errors.push(`${e} is read in src/ but has no words in OTHER_ENV (scripts/docs/cli-reference.ts)`);
  if (other.length) {
    parts.push(
      '',
      '## Other environment variables',
      '',
      table(
        ['variable', 'meaning'],
        other.map((e) => [`\`${e}\``, OTHER_ENV[e] ?? '']),
      ),
    );
  }
  if (errors.length) throw new Error(`the CLI definitions disagree:\n  ${errors.join('\n  ')}`);
  return `${parts.join('\n')}\n`;
}
