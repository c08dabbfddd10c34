/**
 * Test support: runs the real `berth` CLI (bin/berth.js) as a subprocess.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BERTH_BIN, BERTH_ROOT } from '../../src/berth-bin.js';

/** Repository root. */
export const ROOT = BERTH_ROOT;
export { BERTH_BIN };

/** Output and exit status of a finished CLI run. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts `berth ...args` in the background (env merged over process.env, BERTH_* cleared), in `cwd` (default ROOT).
 * A `serve` given no --state-dir (flag or BERTH_STATE_DIR) gets a temporary one, removed when it exits: tests
 * never write a journal to ~/.local/state.
 */
export function spawnBerth(args: string[], env: Record<string, string> = {}, cwd = ROOT): ChildProcess {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BERTH_')));
  const temp =
    args[0] === 'serve' && !args.includes('--state-dir') && env.BERTH_STATE_DIR === undefined
      ? mkdtempSync(join(tmpdir(), 'berth-serve-'))
      : undefined;
  const child = spawn(process.execPath, [BERTH_BIN, ...args], {
    env: { ...clean, ...env, ...(temp ? { BERTH_STATE_DIR: temp } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  if (temp) child.once('close', () => rmSync(temp, { recursive: true, force: true }));
  return child;
}

/** Waits for a spawned process to exit and returns its output. */
export function finished(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** Runs `berth ...args` to completion. */
export function runBerth(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return finished(spawnBerth(args, env));
}

/** Resolves with the first stderr/stdout line matching `re` (e.g. the "berth serving" log line). */
export function waitForLine(child: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => re.test(l));
      if (line) {
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        resolve(line);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code} before printing ${re}: ${buf}`)));
  });
}
