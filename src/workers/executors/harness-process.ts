/**
 * HarnessProcess: one persistent `python3 harness.py` in its own process group (under a watchdog
 * that ends the group if this process dies, watchdog.ts), speaking JSON
 * lines (requests on its fd 3, answers on its fd 4). It runs one request at a time; raw writes
 * to its fd 1/2 (e.g. from subprocesses a node starts) are forwarded as log lines of that request.
 */
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { clipText, LineSplitter, MAX_LINE, pipeLines } from './lines.js';
import { exited, stopGroup } from './kill.js';
import type { ExecEvent, Flow } from './types.js';
import { spawnWatched } from './watchdog.js';

/** Path of the harness script (stdlib only). */
export const HARNESS_PATH = fileURLToPath(new URL('./harness.py', import.meta.url));

const failureFields = { type: z.string(), message: z.string(), traceback: z.string() };
/** One answer line of the harness. */
const answerSchema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('log'), stream: z.enum(['stdout', 'stderr']), line: z.string() }),
  // a batch (harness.py)
  z.object({ t: z.literal('logs'), stream: z.enum(['stdout', 'stderr']), lines: z.array(z.string()) }),
  z.object({ t: z.literal('metric'), name: z.string(), value: z.number() }),
  z.object({ t: z.literal('result'), value: z.unknown() }),
  z.object({ t: z.literal('failure'), ...failureFields }),
  z.object({ t: z.literal('compiled') }),
]);
/** A final answer: what ends a request. */
export type FinalAnswer =
  | { t: 'result'; value: unknown }
  | { t: 'failure'; type: string; message: string; traceback: string }
  | { t: 'compiled' };

interface Pending {
  onEvent: (e: ExecEvent) => void;
  flow?: Flow;
  resolve: (a: FinalAnswer) => void;
}

/** A warm Python interpreter. `python` is the interpreter to start (default `python3`). */
export class HarnessProcess {
  readonly child: ChildProcess;
  #pending?: Pending;
  #dead = false;

  constructor(env: NodeJS.ProcessEnv, python = 'python3') {
    const watched = spawnWatched(python, ['-u', HARNESS_PATH], {
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    this.child = watched.child;
    this.child.once('exit', () => watched.release()); // the watchdog ends what the process left behind
    this.child.on('error', (err) => this.#die(`cannot start the Python interpreter ${python}: ${err.message}`));
    this.child.once('close', (code, sig) => this.#die(`the Python process exited (${sig ?? `code ${code}`})`));
    const answers = new LineSplitter((line) => this.#answer(line), Number.MAX_SAFE_INTEGER);
    const flow = () => this.#pending?.flow;
    pipeLines(this.child.stdio[4] as Readable, answers, flow);
    for (const [fd, stream] of [
      [1, 'stdout'],
      [2, 'stderr'],
    ] as const) {
      pipeLines(
        this.child.stdio[fd] as Readable,
        new LineSplitter((line) => this.#pending?.onEvent({ kind: 'log', stream, line })),
        flow,
      );
    }
    (this.child.stdio[3] as Writable).on('error', () => undefined);
  }

  /** False once the process has exited or failed. */
  get alive(): boolean {
    return !this.#dead && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Sends one request and resolves with its final answer; log and metric answers go to
   * `onEvent` in order (output is read only while `flow` has room). If the process dies first, resolves with a
   * `WorkerProcessDied` failure.
   * @throws Error when a request is already running on this process.
   */
  request(req: Record<string, unknown>, onEvent: (e: ExecEvent) => void, flow?: Flow): Promise<FinalAnswer> {
    if (this.#pending) throw new Error('harness process is busy');
    return new Promise((resolve) => {
      if (this.#dead) return resolve(died('the Python process is gone'));
      this.#pending = { onEvent, flow, resolve };
      (this.child.stdio[3] as Writable).write(JSON.stringify(req) + '\n');
    });
  }

  /** SIGTERM to its group, SIGKILL after `graceMs`; resolves once it has exited. */
  async stop(graceMs: number): Promise<void> {
    if (this.child.pid === undefined) return;
    await stopGroup(this.child, graceMs);
  }

  /** Closes its request pipe so it exits on its own; resolves once it has. */
  async close(): Promise<void> {
    (this.child.stdio[3] as Writable).end();
    await exited(this.child);
  }

  #answer(line: string): void {
    const p = this.#pending;
    if (!p) return;
    let parsed: z.infer<typeof answerSchema>;
    try {
      parsed = answerSchema.parse(JSON.parse(line));
    } catch {
      p.onEvent({ kind: 'log', stream: 'stderr', line: `berth harness: unreadable answer: ${line.slice(0, 200)}` });
      return;
    }
    if (parsed.t === 'log')
      return p.onEvent({ kind: 'log', stream: parsed.stream, line: clipText(parsed.line, MAX_LINE) });
    if (parsed.t === 'logs') {
      for (const line of parsed.lines)
        p.onEvent({ kind: 'log', stream: parsed.stream, line: clipText(line, MAX_LINE) });
      return;
    }
    if (parsed.t === 'metric') return p.onEvent({ kind: 'metric', name: parsed.name, value: parsed.value });
    this.#pending = undefined;
    p.resolve(parsed);
  }

  #die(message: string): void {
    this.#dead = true;
    const p = this.#pending;
    this.#pending = undefined;
    p?.resolve(died(message));
  }
}

function died(message: string): FinalAnswer {
  return { t: 'failure', type: 'WorkerProcessDied', message, traceback: '' };
}
