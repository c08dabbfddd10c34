/**
 * Output paths of a batch (`--log-dir`, `--junit`), checked before any job starts so that a typo
 * costs nothing: errors name the flag and the value (CLI exit 2). The log directory is created
 * one component at a time (never `mkdir -p`: Node's recursive mkdir spins forever on paths such
 * as `/proc/nope`), and both places are proven writable by creating and removing a probe file.
 */
import { closeSync, mkdirSync, openSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { OptionsError } from '../config/options-error.js';

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Throws unless a file can be created in directory `dir`. */
function proveWritable(flag: string, value: string, dir: string): void {
  const probe = join(dir, `.berth-dispatch-probe-${process.pid}`);
  try {
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
  } catch (e) {
    throw new OptionsError(`${flag}: cannot write in ${dir} (got ${JSON.stringify(value)}): ${reason(e)}`);
  }
}

/**
 * Makes sure `dir` (`--log-dir`) is a writable directory, creating it and its missing parents
 * one by one. Returns the absolute path.
 * @throws OptionsError naming --log-dir and the value: a file in the way, a parent that cannot
 * hold directories, a directory that cannot be written.
 */
export function prepareLogDir(dir: string, flag = '--log-dir'): string {
  const abs = resolve(dir);
  const missing: string[] = [];
  let at = abs;
  let st = statOf(at);
  while (st === undefined && dirname(at) !== at) {
    missing.unshift(at);
    at = dirname(at);
    st = statOf(at);
  }
  if (st === undefined || !st.isDirectory()) {
    throw new OptionsError(
      `${flag}: ${at} is ${st === undefined ? 'missing' : 'not a directory'} (got ${JSON.stringify(dir)})`,
    );
  }
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (e) {
      throw new OptionsError(`${flag}: cannot create ${d} (got ${JSON.stringify(dir)}): ${reason(e)}`);
    }
  }
  proveWritable(flag, dir, abs);
  return abs;
}

/**
 * Makes sure the JUnit report `file` can be written later: its directory exists and is writable,
 * and the file itself is not a directory nor read-only. Creates nothing. Returns the absolute path.
 * @throws OptionsError naming --junit and the value.
 */
export function checkReportFile(file: string, flag = '--junit'): string {
  const abs = resolve(file);
  const st = statOf(abs);
  if (st?.isDirectory()) throw new OptionsError(`${flag}: ${abs} is a directory (got ${JSON.stringify(file)})`);
  const parent = statOf(dirname(abs));
  if (parent === undefined || !parent.isDirectory()) {
    throw new OptionsError(
      `${flag}: directory ${dirname(abs)} ${parent === undefined ? 'does not exist' : 'is not a directory'} ` +
        `(got ${JSON.stringify(file)})`,
    );
  }
  if (st !== undefined) {
    try {
      closeSync(openSync(abs, 'a')); // append mode: proves write access without touching the content
    } catch (e) {
      throw new OptionsError(`${flag}: cannot write ${abs} (got ${JSON.stringify(file)}): ${reason(e)}`);
    }
  } else proveWritable(flag, file, dirname(abs));
  return abs;
}
