/**
 * One provisioner's machines (SPEC V2–V4): plans its share of the demand into shapes (a starting
 * machine counts as supply), starts machines through its backend, gives idle ones back after
 * `idle_timeout`, fails starts past `start_timeout`, backs off after a failed start, and
 * reconciles with the engine's view. Every decision is an event; every waiter gets a reason.
 */
import type { EventBus } from '../events.js';
import type { Logger } from '../log/logger.js';
import type { ProvisionedView, ProvisionerView, Shape, Unmet } from '../placement/provisioner.js';
import { describeAmount } from '../resources/books.js';
import type { Backend, EngineState } from './backend.js';
import { Ledger } from './ledger.js';
import { lastWords } from './log-tail.js';
import { pack, shapeHolds } from './pack.js';

/** A pool's limits. Units: ms. */
export interface PoolConfig {
  name: string;
  maxMachines: number;
  idleTimeoutMs: number;
  startTimeoutMs: number;
  /** File listing the machines started and not yet gone, so the next server adopts what a crashed one left. */
  ledger?: string;
}

type State = 'submitting' | 'starting' | 'running' | 'idle' | 'stopping';

interface Machine {
  shape: Shape;
  engineId: string;
  name: string;
  state: State;
  since: number;
  engine?: EngineState;
  /** When it last had neither a claim nor a waiter planned onto it. */
  unneededSince?: number;
  /** Left by a previous server (found in the ledger at start-up). */
  adopted?: boolean;
  /** Its worker attached at least once: gone or late after that, it is lost, not a failed start. */
  attached?: boolean;
}

/** How long a machine asked to stop may stay in its engine before it is asked again, in ms. */
const STOP_RETRY_MS = 30_000;
/** Longest pause between retries of a failed start, in ms. */
const MAX_BACKOFF_MS = 60_000;

/** The machines of one provisioner. */
export class Pool {
  shapes: Shape[] = [];
  readonly #machines: Machine[] = [];
  readonly #reasons = new Map<string, string>();
  #lastError = '';
  #failures = 0;
  #retryAt = 0;
  #backoffMs = 0;
  /** Names of the workers attached at the last plan (provisioned or not): a new machine takes none of them. */
  #attachedNames: ReadonlySet<string> = new Set();
  readonly #ledger: Ledger;

  constructor(
    readonly cfg: PoolConfig,
    readonly backend: Backend,
    readonly deps: { events: EventBus; log: Logger; changed: () => void },
  ) {
    this.#ledger = new Ledger(cfg.ledger);
  }

  /** Reads the backend's shapes (sinfo for a Slurm pool without configured ones); adopts what the ledger lists. */
  async init(): Promise<void> {
    this.shapes = await this.backend.shapes();
    const now = Date.now();
    for (const e of this.#ledger.read()) {
      if (!this.backend.owns(e.engineId, e.name)) continue;
      const { shape, engineId, name } = e;
      this.#machines.push({ shape, engineId, name, state: 'starting', since: now, adopted: true });
      this.deps.log.info(
        { provisioner: this.cfg.name, machine: name, engineId },
        'adopting a machine a previous server left',
      );
    }
  }

  /** True when one of its shapes would hold `u`. */
  covers(u: Pick<Unmet, 'ask' | 'amount'>): boolean {
    return this.shapes.some((s) => shapeHolds(s, u));
  }

  /** Why claim `id` waits on this pool, if it does. */
  reason(id: string): string | undefined {
    return this.#reasons.get(id);
  }

  /**
   * Plans `unmet` (the claims this pool covers) given the attached workers' claim counts. A machine
   * still starting with no unmet claim packed onto it stays wanted while one of the other `waiting`
   * asks fits it (it will serve the queue once attached); else it is unneeded and given back after
   * idle_timeout. Returns the claim ids whose reason changed.
   */
  plan(unmet: Unmet[], attached: Map<string, number>, waiting: Pick<Unmet, 'ask' | 'amount'>[] = [], now = Date.now()) {
    this.#attachedNames = new Set(attached.keys());
    this.#follow(attached, now);
    const starting = this.#machines.filter((m) => m.state === 'submitting' || m.state === 'starting');
    const room = now < this.#retryAt ? 0 : this.cfg.maxMachines - this.#machines.length;
    const { assigned, planned } = pack(
      unmet,
      starting.map((m) => m.shape),
      this.shapes,
      Math.max(0, room),
    );
    const targets = [...starting, ...planned.map((shape) => this.#start(shape, now))];
    const packed = new Set([...assigned.values()].map((i) => targets[i]));
    for (const m of starting) {
      if (packed.has(m) || waiting.some((u) => shapeHolds(m.shape, u))) m.unneededSince = undefined;
      else m.unneededSince ??= now;
    }
    const changed: string[] = [];
    const next = new Map<string, string>();
    for (const u of unmet) {
      const i = assigned.get(u.claimId);
      const why = i === undefined ? this.#why(now) : this.#describe(targets[i]);
      next.set(u.claimId, `waiting for ${this.cfg.name}: ${why}`);
    }
    for (const [id, r] of next) if (this.#reasons.get(id) !== r) changed.push(id);
    this.#reasons.clear();
    for (const [id, r] of next) this.#reasons.set(id, r);
    return changed;
  }

  /** Gives back machines idle (or unneeded while starting) past idle_timeout; fails starts past start_timeout. */
  tick(retire: (name: string, why: string) => boolean, now = Date.now()): boolean {
    let changed = now >= this.#retryAt && this.#retryAt > 0;
    for (const m of this.#machines) {
      const unneeded = m.state === 'starting' && m.unneededSince !== undefined;
      const idleFor = m.state === 'idle' ? now - m.since : unneeded ? now - m.unneededSince! : -1;
      if (idleFor >= this.cfg.idleTimeoutMs) {
        const was = m.state;
        const secs = Math.round(idleFor / 1000);
        const why = was === 'idle' ? 'idle' : 'not needed';
        const detail = `${m.name} (${this.#describe(m)}) given back: ${why} for ${secs} s`;
        m.state = 'stopping'; // before retiring, so nothing plans onto it meanwhile
        if (was === 'idle' && !retire(m.name, `given back by ${this.cfg.name}: idle ${secs} s`)) {
          m.state = was;
          continue;
        }
        this.#stop(m, detail, now);
        changed = true;
      } else if (m.state === 'starting' && now - m.since >= this.cfg.startTimeoutMs) {
        const within = `${this.cfg.startTimeoutMs / 1000} s`;
        if (m.adopted || m.attached) {
          // not a failed start: no backoff, not the pool's last error
          const what = m.attached ? 'detached and did not re-attach' : 'left by a previous server, did not attach';
          const detail = `${m.name} (${this.backend.describe(m.engineId, m.engine)}), ${what} within ${within}`;
          retire(m.name, detail); // the journal may have restored it as not yet back (SPEC S6): it leaves the books
          this.#stop(m, detail, now);
          changed = true;
          continue;
        }
        const late = `${m.name} (${this.#describe(m)}) did not attach within ${within}`;
        this.#fail(`${late}${this.#lastWords(m)}`, now);
        this.#stop(m, `${m.name} stopped: did not attach in time`, now);
        changed = true;
      }
    }
    if (changed && now >= this.#retryAt) this.#retryAt = 0;
    return changed;
  }

  /** Brings the books in line with the engine (squeue / child pids): notices machines gone outside berth. */
  async reconcile(now = Date.now()): Promise<boolean> {
    const known = this.#machines.filter((m) => m.engineId !== '');
    if (!known.length) return false;
    let seen: Map<string, EngineState>;
    try {
      seen = await this.backend.reconcile(known.map((m) => m.engineId));
    } catch (e) {
      this.#lastError = (e as Error).message;
      return false;
    }
    let changed = false;
    for (const m of known) {
      if (!this.#machines.includes(m)) continue;
      const s = seen.get(m.engineId);
      if (s && m.state === 'stopping' && now - m.since >= STOP_RETRY_MS) {
        m.since = now; // still there long after it was asked to stop (scancel failed?): ask again
        void this.backend.stop(m.engineId).catch((e: unknown) => (this.#lastError = (e as Error).message));
      } else if (s && m.state !== 'stopping') {
        changed ||= s.state !== m.engine?.state || s.reason !== m.engine?.reason;
        m.engine = s;
      } else if (!s) {
        this.#machines.splice(this.#machines.indexOf(m), 1);
        changed = true;
        if (m.state === 'stopping' || (m.adopted && !m.attached && m.state === 'starting')) continue;
        const was = this.backend.describe(m.engineId, m.engine);
        const gone = `${m.name} (${was}) is gone: ${this.backend.gone(m.engineId)}`;
        if (m.state === 'starting' && !m.attached) this.#fail(`${gone}; it never attached${this.#lastWords(m)}`, now);
        else {
          const at = { provisioner: this.cfg.name, machine: m.name, engineId: m.engineId };
          const lost = `${gone}${this.#lastWords(m)}; re-planning`;
          this.deps.log.warn(at, lost);
          const detail = `${this.cfg.name}: ${lost}`;
          this.deps.events.emit({ kind: 'machine_lost', machine: m.name, detail });
        }
      }
    }
    if (changed) this.#save();
    return changed;
  }

  /** Every engine id it has (for shutdown). */
  engineIds(): string[] {
    return this.#machines.filter((m) => m.engineId !== '').map((m) => m.engineId);
  }

  /** Starts still in flight (shutdown waits for them, then stops what they started). */
  readonly submitting = new Set<Promise<void>>();

  /** Shapes, machines and last error, for GetSnapshot. */
  view(now = Date.now()): ProvisionerView {
    const machines: ProvisionedView[] = this.#machines.map((m) => ({
      name: m.name,
      engineId: m.engineId,
      state: m.state === 'submitting' ? 'starting' : m.state,
      detail: this.#describe(m),
      sinceMs: now - m.since,
    }));
    const counts = (['starting', 'running', 'idle', 'stopping'] as const)
      .map((s) => `${machines.filter((m) => m.state === s).length} ${s}`)
      .filter((c) => !c.startsWith('0 '));
    const status = machines.length ? `${machines.length} machine(s): ${counts.join(', ')}` : 'no machines';
    const { name, maxMachines } = this.cfg;
    const lastError = this.#lastError;
    return { name, kind: this.backend.kind, shapes: this.shapes, maxMachines, machines, lastError, status };
  }

  /** Follows attach/detach: a started machine whose worker attached runs; with no claim it is idle. */
  #follow(attached: Map<string, number>, now: number): void {
    for (const m of this.#machines) {
      if (m.state === 'submitting' || m.state === 'stopping') continue;
      const claims = attached.get(m.name);
      const next: State = claims === undefined ? 'starting' : claims > 0 ? 'running' : 'idle';
      if (next === m.state) continue;
      if (m.state === 'starting' && next !== 'starting') this.#failures = 0;
      if (next !== 'starting') m.attached = true;
      m.state = next;
      m.since = now;
      m.unneededSince = undefined;
    }
  }

  #start(shape: Shape, now: number): Machine {
    const m: Machine = { shape, engineId: '', name: '', state: 'submitting', since: now };
    this.#machines.push(m);
    // after the placer's decision returns: no process or file work inside a change of the books
    const p = Promise.resolve()
      .then(() => this.backend.provision(shape, (name) => this.#nameTaken(name)))
      .then(
        (s) => {
          m.engineId = s.engineId;
          m.name = s.name;
          m.state = 'starting';
          m.since = Date.now();
          this.#save();
          const detail =
            `${this.cfg.name}: ${this.backend.describe(s.engineId, undefined)} for ` + `${describeShape(shape)}`;
          this.deps.log.info({ provisioner: this.cfg.name, machine: s.name, engineId: s.engineId }, detail);
          this.deps.events.emit({ kind: 'machine_started', machine: s.name, detail });
          void this.reconcile().then(() => this.deps.changed());
        },
        (e: unknown) => {
          this.#machines.splice(this.#machines.indexOf(m), 1);
          this.#fail((e as Error).message, Date.now());
        },
      )
      .finally(() => {
        this.submitting.delete(p);
        this.deps.changed();
      });
    this.submitting.add(p);
    return m;
  }

  /** Writes the ledger: every machine with an engine id (write to a temporary file, then rename). */
  #save(): void {
    try {
      const started = this.#machines.filter((m) => m.engineId !== '');
      this.#ledger.write(started.map((m) => ({ engineId: m.engineId, name: m.name, shape: m.shape })));
    } catch (e) {
      this.deps.log.warn({ provisioner: this.cfg.name, err: (e as Error).message }, 'cannot write the machine ledger');
    }
  }

  /** After shutdown stopped every machine: nothing is left for a next server to adopt. */
  clearLedger(): void {
    try {
      this.#ledger.clear();
    } catch (e) {
      this.deps.log.warn({ provisioner: this.cfg.name, err: (e as Error).message }, 'cannot remove the machine ledger');
    }
  }

  /** True when a worker of that name is attached or one of this pool's machines (its ledger) has it. */
  #nameTaken(name: string): boolean {
    return this.#attachedNames.has(name) || this.#machines.some((m) => m.name === name);
  }

  #fail(message: string, now: number): void {
    this.#lastError = message;
    this.#failures++;
    const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.#failures - 1));
    this.#retryAt = now + wait;
    this.#backoffMs = wait;
    this.deps.log.warn({ provisioner: this.cfg.name, err: message, retryInMs: wait }, 'machine start failed');
    const detail = `${this.cfg.name}: ${message}; retrying in ${Math.round(wait / 1000)} s`;
    this.deps.events.emit({ kind: 'machine_start_failed', detail });
  }

  #stop(m: Machine, detail: string, now: number): void {
    m.state = 'stopping';
    m.since = now;
    this.deps.log.info({ provisioner: this.cfg.name, machine: m.name, engineId: m.engineId }, detail);
    this.deps.events.emit({ kind: 'machine_stopping', machine: m.name, detail: `${this.cfg.name}: ${detail}` });
    void this.backend.stop(m.engineId).catch((e: unknown) => (this.#lastError = (e as Error).message));
  }

  #why(now: number): string {
    if (now < this.#retryAt) return `start failed: ${this.#lastError} (retrying after ${this.#backoffMs / 1000} s)`;
    return `all ${this.cfg.maxMachines} machine(s) it may start (max_machines) are up or starting`;
  }

  /** "; its log (PATH) ends: LINE" for a machine that failed to start or was lost, '' when the log says nothing. */
  #lastWords(m: Machine): string {
    const log = this.backend.logOf(m.engineId, m.name);
    const words = lastWords(log);
    return words ? `; its log (${log}) ends: ${words}` : '';
  }

  #describe(m: Machine): string {
    if (m.state === 'submitting') return this.backend.describe('', undefined);
    const engine = this.backend.describe(m.engineId, m.engine);
    if (m.state === 'starting' && m.attached) return `${engine}, worker ${m.name} detached, not re-attached yet`;
    const waitsForWorker = m.state === 'starting' && m.engine?.state === 'running';
    return engine + (waitsForWorker ? `, worker ${m.name} not attached yet` : '');
  }
}

/** "2 cpu(s) [hpc]". */
function describeShape(s: Shape): string {
  const labels = s.labels.length ? ` [${s.labels.join(',')}]` : '';
  return `${describeAmount({ cpus: s.cpus, gpus: s.gpus, ramMb: s.ramMb, res: s.resources })}${labels}`;
}
