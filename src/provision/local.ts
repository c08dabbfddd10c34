/**
 * The local provisioner (issue 12; SPEC V1): a machine is a `berth worker` child process of this
 * host, in its own process group, logging to `<state-dir>/<name>.log` and keeping its records
 * (SPEC R5) in `<state-dir>/worker-<name>/` — the server's --state-dir, not the user's — offering its
 * shape's inventory. Stopped with SIGTERM to its group (SIGKILL after a grace); reaped on shutdown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Shape } from '../placement/provisioner.js';
import { groupAlive, groupGone, signalGroup } from '../workers/executors/kill.js';
import { StartError, type Backend, type EngineState, type Started } from './backend.js';
import { workerArgv, workerEnv, type WorkerTarget } from './worker-command.js';

/** Grace between SIGTERM and SIGKILL when stopping a worker process, in ms. */
const STOP_GRACE_MS = 5000;

/** Starts `berth worker` processes on this host. */
export class LocalBackend implements Backend {
  readonly kind = 'local';
  readonly #children = new Map<string, ChildProcess>();
  readonly #exits = new Map<string, string>();
  readonly #adopted = new Set<string>();
  #seq = 0;

  constructor(
    readonly name: string,
    readonly configured: Shape[],
    readonly target: WorkerTarget,
  ) {}

  async shapes(): Promise<Shape[]> {
    return this.configured;
  }

  /**
   * Spawns a worker named `<provisioner>-<n>`, the next n whose name is not `taken` (attached, or in the ledger).
   * @throws StartError when its log or process cannot be opened.
   */
  async provision(shape: Shape, taken: (name: string) => boolean = () => false): Promise<Started> {
    let name = `${this.name}-${++this.#seq}`;
    while (taken(name)) name = `${this.name}-${++this.#seq}`;
    const log = this.logOf('', name);
    let fd: number;
    try {
      mkdirSync(this.target.stateDir, { recursive: true });
      fd = openSync(log, 'a');
    } catch (e) {
      throw new StartError(`cannot open the worker log ${log}: ${(e as Error).message}`);
    }
    const [cmd, ...args] = workerArgv(this.target, name, shape, true);
    args.push('--state-dir', join(this.target.stateDir, `worker-${name}`));
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd], env: workerEnv(this.target) });
    closeSync(fd);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (e) => reject(new StartError(`cannot start ${cmd}: ${e.message}`)));
    });
    const id = String(child.pid);
    this.#children.set(id, child);
    child.once('exit', (code, sig) => {
      // the log's path and last line are the pool's to add (once)
      this.#exits.set(id, `worker process ${id} exited ${sig ? `on ${sig}` : `with code ${code}`}`);
      this.#children.delete(id);
    });
    return { engineId: id, name };
  }

  /** The child processes among `ids` still alive (running; a local worker is never pending). */
  async reconcile(ids: string[]): Promise<Map<string, EngineState>> {
    const out = new Map<string, EngineState>();
    for (const id of ids) if (this.#alive(id)) out.set(id, { state: 'running', reason: '' });
    return out;
  }

  /** SIGTERM to the worker's process group, SIGKILL after 5 s if it is still there. */
  async stop(id: string): Promise<void> {
    signalGroup(Number(id), 'SIGTERM');
    setTimeout(() => this.#alive(id) && signalGroup(Number(id), 'SIGKILL'), STOP_GRACE_MS).unref();
  }

  /** True while `id` is a worker it started (or adopted) whose process group still has a live member. */
  #alive(id: string): boolean {
    return (this.#children.has(id) || this.#adopted.has(id)) && groupAlive(Number(id));
  }

  /** A pid in the ledger is adopted only while it still runs `berth worker --name <name>` (pids get reused). */
  owns(id: string, name: string): boolean {
    try {
      const argv = readFileSync(`/proc/${Number(id)}/cmdline`, 'utf8').split('\0');
      if (!argv.includes('worker') || argv[argv.indexOf('--name') + 1] !== name) return false;
    } catch {
      return false;
    }
    this.#adopted.add(id);
    return true;
  }

  logOf(_id: string, name: string): string {
    return join(this.target.stateDir, `${name}.log`);
  }

  gone(id: string): string {
    return this.#exits.get(id) ?? `worker process ${id} is gone`;
  }

  describe(id: string, _s: EngineState | undefined): string {
    return id === '' ? 'starting a worker process' : `worker process ${id}`;
  }

  /** SIGKILL to the process group of every worker in `ids` and every child it started. */
  killNow(ids: string[]): void {
    for (const id of new Set([...ids, ...this.#children.keys()])) signalGroup(Number(id), 'SIGKILL');
  }

  /** Stops every child and resolves once their process groups are gone (SIGKILL after the grace). */
  async close(ids: string[]): Promise<void> {
    const all = new Set([...ids, ...this.#children.keys()]);
    for (const id of all) signalGroup(Number(id), 'SIGTERM');
    await Promise.all(
      [...all].map(async (id) => {
        if (await groupGone(Number(id), STOP_GRACE_MS)) return;
        signalGroup(Number(id), 'SIGKILL');
        await groupGone(Number(id)); // GROUP_GONE_MS after the SIGKILL, as for every group
      }),
    );
  }
}
