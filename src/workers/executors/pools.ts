/**
 * PythonPools: warm harness processes keyed by the env a node asks for (SPEC W6). Nodes with the
 * same env reuse one pool's idle processes, so a node costs no interpreter start; a different env
 * gets one more pool. A process that was cancelled or died is never handed out again.
 *
 * Sized by demand (issue 11): a pool keeps as many processes as its calls recently ran at once
 * (the peak over the last `idleMs`), starts replacements ahead of demand when it falls below that,
 * and retires processes idle for `idleMs`. Every pool together keeps at most `cap` processes (the
 * most calls the machine's allocations allow at once); a call beyond the cap still gets a process,
 * closed when it ends.
 */
import { HarnessProcess } from './harness-process.js';
import { GroupSet } from './kill.js';

/** Bounds of the pools. Units: ms. */
export interface PoolLimits {
  /** Most processes kept over every pool (busy + idle), e.g. the machine's cores. */
  cap: number;
  /** Pools kept at most (least recently used ones with nothing busy go first). */
  maxPools: number;
  /** A process idle this long is retired; also the window of "recent" concurrency. */
  idleMs: number;
}

/** Default idle timeout of a warm process (60 s); BERTH_POOL_IDLE_MS overrides. */
export const DEFAULT_IDLE_MS = 60_000;
const DEFAULT_LIMITS: PoolLimits = { cap: 64, maxPools: 16, idleMs: DEFAULT_IDLE_MS };

/** Counters of the pools, as GetSnapshot reports them (WarmPools). */
export interface PoolStats {
  pools: number;
  idle: number;
  busy: number;
  hits: number;
  misses: number;
  prestarted: number;
  retired: number;
  cap: number;
}

interface Idle {
  proc: HarnessProcess;
  since: number;
}

interface Pool {
  key: string;
  /** The node's own env (the allocation's), applied over this process's env when one starts. */
  askEnv: Record<string, string>;
  idle: Idle[];
  busy: number;
  /** Most calls at once within the current window, and when the window began. */
  peak: number;
  peakSince: number;
  usedAt: number;
}

/**
 * The cap of a machine's warm processes: what its allocations allow at once — its cores (a call
 * holds at least part of one), and `maxParallel` calls when that is set — at least 1, at most 256.
 */
export function poolCap(cpus: number, maxParallel = 0): number {
  const byCores = Math.max(1, Math.ceil(cpus));
  return Math.min(256, maxParallel > 0 ? Math.min(byCores, maxParallel) : byCores);
}

/** The key of a node's env: its entries sorted, so equal envs share a pool. */
export function envKey(env: Record<string, string | undefined>): string {
  const keys = Object.keys(env)
    .filter((k) => env[k] !== undefined)
    .sort();
  let out = '';
  for (const k of keys) out += `${k}\u0000${env[k]}\u0001`;
  return out;
}

/** A process handed out by `acquire`; give it back with `release`. */
export interface Lease {
  proc: HarnessProcess;
  key: string;
}

/**
 * All pools of one executor. `onPoolsChanged(count)` is called whenever the pool count changes;
 * every process's group is tracked in `groups` while it lives.
 */
export class PythonPools {
  readonly #pools = new Map<string, Pool>();
  readonly #limits: PoolLimits;
  readonly #base: NodeJS.ProcessEnv = { ...process.env };
  #sweep?: NodeJS.Timeout;
  #closed = false;
  /** Interpreter starts so far (for status and tests). */
  started = 0;
  #hits = 0;
  #misses = 0;
  #prestarted = 0;
  #retired = 0;

  constructor(
    readonly python = 'python3',
    limits: Partial<PoolLimits> = {},
    readonly onPoolsChanged: (count: number) => void = () => undefined,
    readonly groups = new GroupSet(),
  ) {
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Number of pools (distinct envs with live or busy processes). */
  get count(): number {
    return this.#pools.size;
  }

  /** Pool sizes and hit/miss counters. */
  stats(): PoolStats {
    let idle = 0;
    let busy = 0;
    for (const p of this.#pools.values()) {
      idle += p.idle.length;
      busy += p.busy;
    }
    return {
      pools: this.#pools.size,
      idle,
      busy,
      hits: this.#hits,
      misses: this.#misses,
      prestarted: this.#prestarted,
      retired: this.#retired,
      cap: this.#limits.cap,
    };
  }

  /**
   * A process for a node asking for `askEnv` (the allocation's env; this process's own env lies
   * under it): an idle one of its pool (a hit), else a new one (a miss).
   */
  acquire(askEnv: Record<string, string>): Lease {
    const key = envKey(askEnv);
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = { key, askEnv: { ...askEnv }, idle: [], busy: 0, peak: 0, peakSince: Date.now(), usedAt: 0 };
      this.#pools.set(key, pool);
      this.#evict();
      this.onPoolsChanged(this.#pools.size);
    }
    const now = Date.now();
    pool.usedAt = now;
    pool.busy++;
    this.#notePeak(pool, now);
    let idle: Idle | undefined;
    while ((idle = pool.idle.pop()) && !idle.proc.alive);
    let proc: HarnessProcess;
    if (idle) {
      this.#hits++;
      proc = idle.proc;
    } else {
      this.#misses++;
      proc = this.#start(pool);
    }
    this.#topUp(pool);
    this.#arm();
    return { proc, key };
  }

  /**
   * Gives a process back: kept warm when `reusable`, alive and within the cap, else closed (and
   * replaced when the pool's recent demand needs it).
   */
  release(lease: Lease, reusable: boolean): void {
    const pool = this.#pools.get(lease.key);
    if (pool) pool.busy--;
    const { proc } = lease;
    if (pool && reusable && proc.alive && !this.#closed && this.#total() < this.#limits.cap) {
      pool.idle.push({ proc, since: Date.now() });
      return;
    }
    if (proc.alive) void proc.close();
    if (!pool) return;
    this.#topUp(pool);
    this.#dropIfEmpty(pool);
  }

  /** Closes every idle process and forgets every pool; busy processes close when released. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
    const procs = [...this.#pools.values()].flatMap((p) => p.idle.map((i) => i.proc));
    const had = this.#pools.size;
    this.#pools.clear();
    if (had) this.onPoolsChanged(0);
    await Promise.all(procs.map((p) => p.close()));
  }

  #start(pool: Pool): HarnessProcess {
    this.started++;
    const proc = new HarnessProcess({ ...this.#base, ...pool.askEnv }, this.python);
    this.groups.add(proc.child);
    proc.child.once('exit', () => this.groups.forget(proc.child));
    return proc;
  }

  /** Processes of every pool: busy and idle. */
  #total(): number {
    let n = 0;
    for (const p of this.#pools.values()) n += p.busy + p.idle.length;
    return n;
  }

  #notePeak(pool: Pool, now: number): void {
    if (now - pool.peakSince > this.#limits.idleMs) {
      pool.peak = pool.busy;
      pool.peakSince = now;
    }
    pool.peak = Math.max(pool.peak, pool.busy);
  }

  /** Starts processes ahead of demand while the pool holds fewer than its recent peak (within the cap). */
  #topUp(pool: Pool): void {
    if (this.#closed || this.#pools.get(pool.key) !== pool) return;
    while (pool.busy + pool.idle.length < pool.peak && this.#total() < this.#limits.cap) {
      this.#prestarted++;
      // idle at once: a request sent while the interpreter still boots waits in its pipe
      pool.idle.unshift({ proc: this.#start(pool), since: Date.now() });
    }
  }

  #dropIfEmpty(pool: Pool): void {
    if (pool.busy === 0 && pool.idle.length === 0 && this.#pools.get(pool.key) === pool) {
      this.#pools.delete(pool.key);
      this.onPoolsChanged(this.#pools.size);
    }
  }

  /** Starts the idle sweep (unref'd: it never keeps the process alive). */
  #arm(): void {
    if (this.#sweep || this.#closed) return;
    this.#sweep = setInterval(() => this.#retire(), Math.max(50, Math.floor(this.#limits.idleMs / 4)));
    this.#sweep.unref();
  }

  /** Retires processes idle for idleMs; a pool left with nothing is forgotten; the sweep stops with no pools. */
  #retire(): void {
    const now = Date.now();
    for (const pool of [...this.#pools.values()]) {
      this.#notePeak(pool, now);
      const keep = pool.idle.filter((i) => now - i.since < this.#limits.idleMs && i.proc.alive);
      for (const i of pool.idle)
        if (!keep.includes(i)) {
          if (i.proc.alive) this.#retired++;
          void i.proc.close();
        }
      pool.idle = keep;
      this.#dropIfEmpty(pool);
    }
    if (this.#pools.size === 0) {
      clearInterval(this.#sweep);
      this.#sweep = undefined;
    }
  }

  /** Drops the least recently used pools with nothing busy while there are too many. */
  #evict(): void {
    const idle = [...this.#pools.values()].filter((p) => p.busy === 0).sort((a, b) => a.usedAt - b.usedAt);
    while (this.#pools.size > this.#limits.maxPools && idle.length) {
      const p = idle.shift()!;
      this.#pools.delete(p.key);
      for (const i of p.idle) void i.proc.close();
    }
  }
}
