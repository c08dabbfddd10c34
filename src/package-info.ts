/**
 * The berth package itself: its root directory (holding package.json and proto/), found from this
 * module whether it runs from src/ (tsx, tests) or from the bundle in dist/ (bin/build.mjs), and
 * its version as package.json states it — the one place the version is written.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'proto'))) return dir;
    if (dirname(dir) === dir) throw new Error(`berth: no package.json with proto/ above ${from}`);
  }
}

/** Root directory of the berth checkout or package. */
export const PACKAGE_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** Version of this berth build (package.json `version`), e.g. `0.1.0`. */
export const VERSION: string = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
