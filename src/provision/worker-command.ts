/**
 * The `berth worker` a provisioner starts (issue 12): by absolute paths (node and berth's bin),
 * dialing the server's advertised address, under a name the provisioner chose, with the labels
 * of its shape; the token travels in the environment (BERTH_TOKEN), never on the command line.
 */
import { fromUnits } from '../resources/quantity.js';
import { execFile } from 'node:child_process';
import { BERTH_ARGV } from '../berth-bin.js';
import type { Shape } from '../placement/provisioner.js';

/** What every started worker needs from the server. */
export interface WorkerTarget {
  /** `host:port` the worker dials (the server's --advertise address). */
  server: string;
  token?: string;
  /** Directory for the workers' log files. */
  stateDir: string;
}

/** argv of `berth worker` for a machine named `name` of `shape` (inventory flags only when `withInventory`). */
export function workerArgv(t: WorkerTarget, name: string, shape: Shape, withInventory: boolean): string[] {
  const argv = [...BERTH_ARGV, 'worker', '--server', t.server, '--name', name];
  if (shape.labels.length) argv.push('--labels', shape.labels.join(','));
  if (withInventory) {
    argv.push('--cpus', String(shape.cpus), '--gpus', shape.gpus ? `0-${shape.gpus - 1}` : '');
    if (shape.ramMb !== undefined) argv.push('--ram-mb', String(shape.ramMb));
  }
  if (shape.gpuType) argv.push('--gpu-type', shape.gpuType); // a type cannot be detected: always given
  // named resources cannot be detected: always given (issue 23)
  const named = Object.entries(shape.resources ?? {}).map(([k, u]) => `${k}=${fromUnits(u)}`);
  if (named.length) argv.push('--resources', named.join(','));
  return argv;
}

/** This process's environment without BERTH_* (the server's own settings), plus the token. */
export function workerEnv(t: WorkerTarget): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BERTH_')));
  return t.token ? { ...env, BERTH_TOKEN: t.token } : env;
}

/** Output of a finished command. `code` null when it could not run or was killed (timeout). */
export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cmd args` (at most `timeoutMs`, default 30 s). Never rejects: a missing command or a
 * timeout is code null with the reason in stderr.
 */
export function runCommand(
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const e = err as { code?: number | string; killed?: boolean; message: string } | null;
      const fail = (why: string) => resolve({ code: null, stdout, stderr: why });
      if (e && typeof e.code === 'string') return fail(e.code === 'ENOENT' ? `${cmd}: command not found` : e.message);
      if (e?.killed) return fail(`${cmd}: no answer within ${timeoutMs / 1000} s`);
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A command's error output as one line: "sbatch: error: invalid partition specified: nope; …". */
export function oneLine(text: string): string {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join('; ');
}
