/**
 * Token files of `berth serve --worker-tokens FILE` / `--client-tokens FILE` (SPEC R7): a YAML
 * map of name → token, e.g. `gpu1: 9f2c…`. The name is the identity the token proves.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import * as z from 'zod';
import { OptionsError } from './fields.js';

/** Shortest token accepted, in characters: a token is a secret, not a password to type. */
export const MIN_TOKEN_LENGTH = 16;

const schema = z.record(
  z
    .string()
    .min(1)
    .max(63)
    .regex(/^[A-Za-z0-9_.-]+$/, 'a name holds only letters, digits and _ . -'),
  z
    .string()
    .min(MIN_TOKEN_LENGTH, `a token has at least ${MIN_TOKEN_LENGTH} characters`)
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, 'a token holds printable ASCII only, no spaces'),
  { error: 'expected a map of name: token' },
);

/** Token → name, read from one file. */
export type TokenMap = ReadonlyMap<string, string>;

/**
 * Reads and checks a token file.
 * @param flag the flag that named it, for messages (e.g. `--worker-tokens`)
 * @throws OptionsError `--worker-tokens <file>: …` for an unreadable file, bad YAML, a bad name or
 *   token (the token itself is never printed), or one token given to two names.
 */
export function readTokenFile(flag: string, file: string): TokenMap {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new OptionsError(`${flag} ${file}: cannot read it: ${why}`);
  }
  let doc: unknown;
  try {
    doc = parse(text) ?? {};
  } catch (err) {
    throw new OptionsError(`${flag} ${file}: not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const r = schema.safeParse(doc);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue.path.length ? ` (name ${JSON.stringify(String(issue.path[0]))})` : '';
    throw new OptionsError(`${flag} ${file}: ${issue.message}${where}`);
  }
  const byToken = new Map<string, string>();
  for (const [name, token] of Object.entries(r.data)) {
    const other = byToken.get(token);
    if (other !== undefined) {
      throw new OptionsError(
        `${flag} ${file}: names ${JSON.stringify(other)} and ${JSON.stringify(name)} share one token`,
      );
    }
    byToken.set(token, name);
  }
  return byToken;
}
