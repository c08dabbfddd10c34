/**
 * CommandExecutor: runs a `command` payload as a subprocess in a new process group (SPEC W6),
 * under a watchdog that ends the group if this process dies (SPEC R5, watchdog.ts); once the
 * program exits, whatever it left in its group is ended too.
 * `{devices}` in argv becomes the granted ids as a range string; env = process env + allocation
 * env + command env; output lines become log events; exit 0 → {exit_code: 0}, else `ExitCode`.
 */
import { formatRange } from '../../resources/ranges.js';
import { LineSplitter, pipeLines } from './lines.js';
import { DEFAULT_GRACE_MS, exited, GroupSet, stopGroup } from './kill.js';
import { cwdProblem, spawnWatched } from './watchdog.js';
import type { CommandPayload, ExecEvent, Executor, Flow, Outcome, Task } from './types.js';

/** Replaces every `{devices}` in `argv` with `formatRange(gpuIds)` (e.g. `0-3`). */
export function expandDevices(argv: string[], gpuIds: number[]): string[] {
  const range = formatRange(gpuIds);
  return argv.map((a) => a.split('{devices}').join(range));
}

/**
 * Runs command payloads. `graceMs`: SIGTERM → SIGKILL delay on cancel; `groups`: where the
 * process groups of running commands are tracked (so an owner can SIGKILL them all at once).
 */
export class CommandExecutor implements Executor {
  constructor(
    readonly graceMs = DEFAULT_GRACE_MS,
    readonly groups = new GroupSet(),
  ) {}

  /** See Executor.run. A program that cannot be started is a `SpawnError` failure. */
  async run(task: Task, onEvent: (e: ExecEvent) => void, signal: AbortSignal, flow?: Flow): Promise<Outcome> {
    const p = task.payload as CommandPayload;
    if (p.kind !== 'command') throw new TypeError('CommandExecutor runs command payloads only');
    signal.throwIfAborted();
    const [file, ...args] = expandDevices(p.argv, task.gpuIds);
    // The watchdog starts the program through /bin/sh: a missing cwd would read "spawn /bin/sh ENOENT".
    const badCwd = p.cwd ? cwdProblem(p.cwd) : undefined;
    if (badCwd)
      return {
        ok: false,
        type: 'SpawnError',
        message: `cannot start ${JSON.stringify(file)}: ${badCwd}`,
        traceback: '',
      };
    const { child, release } = spawnWatched(file, args, {
      cwd: p.cwd || undefined,
      env: { ...process.env, ...task.env, ...p.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.groups.add(child);
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    for (const stream of ['stdout', 'stderr'] as const) {
      pipeLines(child[stream], new LineSplitter((line) => onEvent({ kind: 'log', stream, line })), () => flow);
    }
    // Output ends when both pipes close (not the child's 'close': the watchdog's pipe stays open until release()).
    const closed = Promise.all(
      [child.stdout, child.stderr].map(
        (st) => new Promise<void>((resolve) => (st.closed ? resolve() : st.once('close', () => resolve()))),
      ),
    );
    let stopping: Promise<void> | undefined;
    const onAbort = () => {
      stopping = stopGroup(child, this.graceMs);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const first = await Promise.race([spawnError, exited(child).then(() => null)]);
      if (first)
        return {
          ok: false,
          type: 'SpawnError',
          message: `cannot start ${JSON.stringify(file)}: ${first.message}`,
          traceback: '',
        };
      // Output may still be in the pipes; a background grandchild may hold them open: wait briefly.
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1000))]);
      child.stdout.destroy();
      child.stderr.destroy();
      if (stopping) {
        await stopping;
        throw signal.reason;
      }
      if (child.exitCode === 0) return { ok: true, value: { exit_code: 0 } };
      const how = child.exitCode !== null ? `exited with code ${child.exitCode}` : `killed by ${child.signalCode}`;
      return { ok: false, type: 'ExitCode', message: `${file} ${how}`, traceback: '' };
    } finally {
      signal.removeEventListener('abort', onAbort);
      release(); // the watchdog ends whatever the program left in its group
      this.groups.forget(child);
    }
  }
}
