/**
 * `make docs`: writes docs/reference/cli.md and docs/reference/config.md from the CLI's and the
 * config file's own definitions. With `--check` (`make check-docs`) it writes nothing and exits 1
 * naming each page that differs from what the code gives, like `make check-generated`.
 * Usage: npx tsx scripts/docs/gen-reference.ts [--check]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { referencePages } from './reference.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const check = process.argv.includes('--check');
const stale: string[] = [];
let pages: Record<string, string>;
try {
  pages = await referencePages(root);
} catch (e) {
  console.error(`make docs: ${(e as Error).message}`);
  process.exit(1);
}
for (const [path, text] of Object.entries(pages)) {
  const file = join(root, path);
  const now = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (now === text) continue;
  if (check) {
    stale.push(path);
  } else {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    console.log(`wrote ${path}`);
  }
}
if (stale.length) {
  console.error(`${stale.join(', ')}: stale (the CLI or config definitions changed): run 'make docs' and commit`);
  process.exit(1);
}
