/**
 * Every rule the repository cites ("SPEC R8", "SPEC P2–P8, P11") must be explained on docs/rules.md,
 * under an anchor of its own (`<a id="r8">`). Scans the sources, tests, protos, the Python client and
 * the docs; a range cites every rule in it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIRS = ['src', 'test', 'bench', 'proto', 'examples', 'docs', 'clients/python/src'];
const TEXT = /\.(ts|mjs|js|py|proto|md)$/;
const RULE = String.raw`[A-Z]\d+(?:[–-][A-Z]?\d+)?`;
const CITATION = new RegExp(`SPEC (${RULE}(?:(?:, | and |/)${RULE})*)`, 'g');

/** `P2–P8` → P2 … P8; `R1` → R1. */
function expand(token: string): string[] {
  const m = /^([A-Z])(\d+)(?:[–-][A-Z]?(\d+))?$/.exec(token);
  if (!m) return [];
  const [from, to] = [Number(m[2]), Number(m[3] ?? m[2])];
  return Array.from({ length: Math.max(0, to - from) + 1 }, (_, i) => `${m[1]}${from + i}`);
}

/** Files under `dir` (relative to `root`) that may cite rules; generated stubs and vendored code left out. */
function files(root: string, dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  const all = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' });
  return all
    .filter((f) => TEXT.test(f) && !f.includes('_proto') && !f.includes('node_modules'))
    .map((f) => join(dir, f));
}

/** Each cited rule without an anchor on docs/rules.md, with the first file citing it: `R9 (src/x.ts)`. */
export function unexplainedRules(root: string): string[] {
  const rules = readFileSync(join(root, 'docs', 'rules.md'), 'utf8');
  const anchors = new Set([...rules.matchAll(/<a id="([a-z]\d+)"><\/a>/g)].map((m) => m[1]));
  const missing = new Map<string, string>();
  for (const file of ['README.md', ...DIRS.flatMap((d) => files(root, d))]) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(CITATION)) {
      for (const token of m[1].split(/, | and |\//)) {
        for (const rule of expand(token)) {
          if (!anchors.has(rule.toLowerCase()) && !missing.has(rule)) missing.set(rule, file);
        }
      }
    }
  }
  return [...missing].map(([rule, file]) => `${rule} (${file})`);
}
