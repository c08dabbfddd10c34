/**
 * PythonPools: warm harness processes keyed by env (SPEC W6). Nodes with the same env reuse one
 * pool's idle processes, so a node costs no interpreter start; a different env gets one more
 * pool. A process that was cancelled or died is never handed out again.
 */
import { HarnessProcess } from './harness-process.js';
import { GroupSet } from './kill.js';

/** Bounds of the pools: idle processes kept per pool, pools kept in all. */
export interface PoolLimits {
  maxIdlePerPool: number;
  maxPools: number;
}

const DEFAULT_LIMITS: PoolLimits = { maxIdlePerPool: 4, maxPools: 16 };

interface Pool {
  key: string;
  env: NodeJS.ProcessEnv;
  idle: HarnessProcess[];
  busy: number;
  usedAt: number;
}

/** The key of an env: its entries sorted, so equal envs share a pool. */
export function envKey(env: Record<string, string | undefined>): string {
  return JSON.stringify(Object.entries(env).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * All pools of one executor. `onPoolsChanged(count)` is called whenever the pool count changes;
 * every process's group is tracked in `groups` while it lives.
 */
export class PythonPools {
  readonly #pools = new Map<string, Pool>();
  readonly #limits: PoolLimits;
  /** Interpreter starts so far (for status and tests). */
  started = 0;

  constructor(readonly python = 'python3', limits: Partial<PoolLimits> = {}, readonly onPoolsChanged: (count: number) => void = () => undefined, readonly groups = new GroupSet()) {
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Number of pools (distinct envs with live or busy processes). */
  get count(): number {
    return this.#pools.size;
  }

  /** An idle process for `env` (full process env), starting one only when the pool has none. */
  acquire(env: NodeJS.ProcessEnv): HarnessProcess {
    const key = envKey(env);
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = { key, env, idle: [], busy: 0, usedAt: 0 };
      this.#pools.set(key, pool);
      this.#evict();
      this.onPoolsChanged(this.#pools.size);
    }
    pool.usedAt = Date.now();
    pool.busy++;
    let proc: HarnessProcess | undefined;
    while ((proc = pool.idle.pop()) && !proc.alive);
    if (proc) return proc;
    this.started++;
    const started = new HarnessProcess(env, this.python);
    this.groups.add(started.child);
    started.child.once('exit', () => this.groups.forget(started.child));
    return started;
  }

  /** Gives `proc` back: kept warm when `reusable` and alive and there is room, else closed. */
  release(env: NodeJS.ProcessEnv, proc: HarnessProcess, reusable: boolean): void {
    const pool = this.#pools.get(envKey(env));
    if (pool) pool.busy--;
    if (pool && reusable && proc.alive && pool.idle.length < this.#limits.maxIdlePerPool) {
      pool.idle.push(proc);
      return;
    }
    if (proc.alive) void proc.close();
    if (pool && pool.busy === 0 && pool.idle.length === 0) {
      this.#pools.delete(pool.key);
      this.onPoolsChanged(this.#pools.size);
    }
  }

  /** Closes every idle process and forgets every pool; busy processes close when released. */
  async closeAll(): Promise<void> {
    const procs = [...this.#pools.values()].flatMap((p) => p.idle);
    const had = this.#pools.size;
    this.#pools.clear();
    if (had) this.onPoolsChanged(0);
    await Promise.all(procs.map((p) => p.close()));
  }

  /** Drops the least recently used pools with nothing busy while there are too many. */
  #evict(): void {
    const idle = [...this.#pools.values()].filter((p) => p.busy === 0).sort((a, b) => a.usedAt - b.usedAt);
    while (this.#pools.size > this.#limits.maxPools && idle.length) {
      const p = idle.shift()!;
      this.#pools.delete(p.key);
      for (const proc of p.idle) void proc.close();
    }
  }
}
