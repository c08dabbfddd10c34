/**
 * Processes die with whoever started them (SPEC R5, issue 10 item 8). Node has no parent-death
 * signal, so each child is started through `sh`, which leaves a tiny watchdog in the child's new
 * process group and then execs the program (same pid, so the pid is still the group id). The
 * watchdog holds one end of a pipe whose other end only this process holds; when this process dies
 * (even by SIGKILL) or calls `release()`, the watchdog reads EOF and SIGKILLs the whole group.
 * The watchdog ignores SIGTERM/SIGINT/SIGHUP, so a graceful stop (SIGTERM to the group) lets the
 * program end on its own first; the SIGKILL sweep after it ends the watchdog too.
 */
import { spawn, type ChildProcess, type SpawnOptions, type StdioOptions } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** A child with piped stdout and stderr (as both executors spawn them). */
type ChildProcessByStdio = ChildProcess & { stdout: Readable; stderr: Readable };

/** A child started under a watchdog. */
export interface Watched {
  child: ChildProcessByStdio;
  /** Ends the watchdog: it SIGKILLs what is left of the group (call once the program has exited). */
  release(): void;
}

/**
 * Spawns `file args` detached (its own process group) under a watchdog. `stdio` must be an array;
 * the watchdog's pipe is added after it and closed for the program itself.
 * A program that cannot be found or is not executable emits 'error' (ENOENT / EACCES) like spawn.
 */
export function spawnWatched(
  file: string,
  args: string[],
  options: SpawnOptions & { stdio: Exclude<StdioOptions, string> },
): Watched {
  const fd = options.stdio.length;
  const missing = findProgram(file, options.env?.PATH ?? process.env.PATH ?? '', options.cwd?.toString());
  if (missing) {
    // Let Node report it the way it always did (an 'error' event on the child), without a watchdog.
    const child = spawn(file, args, { ...options, detached: true });
    return { child: child as ChildProcessByStdio, release: () => undefined };
  }
  const script = `(trap '' TERM INT HUP; read _ <&${fd}; kill -KILL 0) </dev/null >/dev/null 2>&1 & exec "$@" ${fd}<&-`;
  const stdio = [...options.stdio, 'pipe'] as StdioOptions;
  const child = spawn('/bin/sh', ['-c', script, 'sh', file, ...args], {
    ...options,
    detached: true,
    stdio,
  }) as ChildProcessByStdio;
  const pipe = child.stdio[fd] as Writable | null;
  pipe?.on('error', () => undefined);
  let released = false;
  return {
    child,
    release() {
      if (released) return;
      released = true;
      pipe?.destroy();
    },
  };
}

/**
 * Undefined when `file` names an executable program (found on `path` when it has no slash),
 * else the errno ('ENOENT' or 'EACCES') spawn would report.
 */
function findProgram(file: string, path: string, cwd?: string): string | undefined {
  const executable = (p: string) => {
    try {
      if (statSync(p).isDirectory()) return 'EACCES';
      accessSync(p, constants.X_OK);
      return undefined;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EACCES' ? 'EACCES' : 'ENOENT';
    }
  };
  if (file.includes('/')) return executable(isAbsolute(file) || !cwd ? file : join(cwd, file));
  let why = 'ENOENT';
  for (const dir of path.split(delimiter)) {
    const r = executable(join(dir || '.', file));
    if (r === undefined) return undefined;
    if (r === 'EACCES') why = r;
  }
  return why;
}

/**
 * Why `cwd` cannot be a program's working directory ("cwd /x does not exist"), or undefined when it
 * can; checked before spawning, since under the watchdog a missing cwd would read "spawn /bin/sh ENOENT"
 * (dispatch's local jobs use it too).
 */
export function cwdProblem(cwd: string): string | undefined {
  try {
    return statSync(cwd).isDirectory() ? undefined : `cwd ${cwd} is not a directory`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `cwd ${cwd} does not exist` : `cwd ${cwd} cannot be used (${code ?? String(err)})`;
  }
}
