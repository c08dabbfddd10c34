/**
 * Executors: one entry point that runs a task with the executor for its payload (command or
 * Python source). Shared by the `berth worker` agent and by the server for engine-host runs.
 */
import { CommandExecutor } from './command.js';
import { GroupSet } from './kill.js';
import { limitEvent, limitOutcome } from './limits.js';
import { PythonExecutor, type PythonExecutorOptions } from './python.js';
import type { ExecEvent, ExecFailure, Executor, Flow, Outcome, Task } from './types.js';

export type { ExecEvent, ExecFailure, Executor, Flow, Outcome, Task } from './types.js';
export { AGENT_MAX_MESSAGE_BYTES, MAX_FAILURE_TEXT_BYTES, MAX_MESSAGE_BYTES, MAX_RESULT_BYTES } from './limits.js';
export { MAX_LINE } from './lines.js';

/** Both executors behind the one Executor interface. */
export class Executors implements Executor {
  readonly command: CommandExecutor;
  readonly python: PythonExecutor;
  /** Process groups of every running command and every Python process. */
  readonly groups: GroupSet;

  /** `graceMs`: SIGTERM → SIGKILL delay on cancel (default 10 s). */
  constructor(o: PythonExecutorOptions = {}) {
    this.groups = o.groups ?? new GroupSet();
    this.command = new CommandExecutor(o.graceMs, this.groups);
    this.python = new PythonExecutor({ ...o, groups: this.groups });
  }

  /** SIGKILLs every process group still running, now (synchronous: for a second signal before exit). */
  killAll(): void {
    this.groups.killAll();
  }

  /**
   * Runs `task` with the executor of its payload kind. See Executor.run. The outcome is size-checked
   * (limits.ts): a result over MAX_RESULT_BYTES becomes a `ResultTooLarge` failure; a metric the
   * server would refuse (empty or over-long name) becomes a stderr line.
   */
  async run(task: Task, onEvent: (e: ExecEvent) => void, signal: AbortSignal, flow?: Flow): Promise<Outcome> {
    const send = (e: ExecEvent) => onEvent(limitEvent(e));
    const o = await (task.payload.kind === 'command'
      ? this.command.run(task, send, signal, flow)
      : this.python.run(task, send, signal, flow));
    return limitOutcome(o);
  }

  /** Compile check of Python source; undefined when it compiles. */
  compile(source: string, filename: string): Promise<ExecFailure | undefined> {
    return this.python.compile(source, filename);
  }

  /** Closes warm Python processes. */
  close(): Promise<void> {
    return this.python.close();
  }
}
