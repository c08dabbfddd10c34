/**
 * Fails (exit 1) when a relative link in README.md or docs/**.md names a missing file or anchor
 * (links.ts), or when the repository cites a rule ("SPEC R8") that docs/rules.md does not explain
 * (rules-cited.ts), printing each one. Usage: npx tsx scripts/docs/check-links.ts
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brokenLinks } from './links.js';
import { unexplainedRules } from './rules-cited.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const problems = [
  ...brokenLinks(root),
  ...unexplainedRules(root).map((r) => `rule ${r} is cited but has no <a id> on docs/rules.md`),
];
if (problems.length) {
  console.error(`the docs have problems:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
