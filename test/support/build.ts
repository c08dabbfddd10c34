/**
 * Vitest global setup: builds the CLI (bin/build.mjs, about a second) so tests that spawn
 * bin/berth.js run the sources under test, not an older dist/.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './cli.js';

export default function setup(): void {
  execFileSync(process.execPath, [join(ROOT, 'bin', 'build.mjs')], { stdio: 'inherit' });
}
