/**
 * Where berth's own CLI lives, for starting `berth worker` processes (provisioners) by absolute
 * paths, independent of the working directory: the one place that knows the entry point's path.
 */
import { join } from 'node:path';
import { PACKAGE_ROOT } from './package-info.js';

/** Absolute path of the package root (package-info.ts finds it). */
export const BERTH_ROOT = PACKAGE_ROOT;
/** Absolute path of the `berth` CLI entry point. */
export const BERTH_BIN = join(BERTH_ROOT, 'bin', 'berth.js');
/** The command that runs berth: node (absolute) and the entry point. */
export const BERTH_ARGV: readonly string[] = [process.execPath, BERTH_BIN];
