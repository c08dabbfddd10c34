/**
 * Where berth's own CLI lives, for starting `berth worker` processes (provisioners) by absolute
 * paths, independent of the working directory: the one place that knows the layout.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the nearest directory above this module holding package.json and bin/berth.js. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin', 'berth.js'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`berth's bin/berth.js not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** Absolute path of the package root. */
export const BERTH_ROOT = packageRoot();
/** Absolute path of the `berth` CLI entry point. */
export const BERTH_BIN = join(BERTH_ROOT, 'bin', 'berth.js');
/** The command that runs berth: node (absolute) and the entry point. */
export const BERTH_ARGV: readonly string[] = [process.execPath, BERTH_BIN];
