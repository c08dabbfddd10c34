/**
 * Fails (exit 1) when a relative link in README.md or docs/**.md names a missing file or anchor,
 * printing each one (see links.ts). Usage: npx tsx scripts/docs/check-links.ts
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brokenLinks } from './links.js';

const problems = brokenLinks(join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
if (problems.length) {
  console.error(`broken links in the docs:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
