/**
 * Test support: a conservation referee for the resource model (issue 23 acceptance). It keeps its own books of
 * every grant the placer announces (node_placed … claim_released / claim_lost) and, after every event and every
 * operation, checks the placer's snapshot against them in every dimension: cores, device ids, memory, each named
 * per-machine resource and each cluster-wide pool — every counter within [0, total], free = total − the sum of
 * the held allocations, no device id in two holdings, and no grant taking a pool past its total. It never looks at
 * the placer's indexes; violations are collected as readable strings.
 */
import { EventBus, type BerthEvent } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { PlacerSnapshot } from '../../src/placement/snapshot.js';
import type { Grant, MachineSpec, NormalizedAsk } from '../../src/placement/types.js';

/** One held claim in the referee's books: its machine and what it holds (named in units, pools apart). */
interface Kept {
  machine: string;
  cpus: number;
  gpuIds: number[];
  ramMb: number;
  res: Record<string, number>;
  pools: Record<string, number>;
}

/** An in-process Placer with pools under the conservation referee. */
export class ConservationReferee {
  readonly events = new EventBus();
  readonly placer: Placer;
  readonly violations: string[] = [];
  /** Held claims by id, by the referee's own books. */
  readonly held = new Map<string, Kept>();
  /** Checks made (events and operations). */
  checks = 0;
  readonly #poolNames: Set<string>;

  /** @param pools pool name → total in units of 1e-4 */
  constructor(engine: MachineSpec, pools: Record<string, number>) {
    let ids = 0;
    this.#poolNames = new Set(Object.keys(pools));
    this.placer = new Placer({ engine, events: this.events, pools, newClaimId: () => `c${++ids}` });
    this.events.subscribe((e) => this.#onEvent(e));
  }

  #fail(what: string): void {
    if (this.violations.length < 20) this.violations.push(what);
  }

  #onEvent(e: BerthEvent): void {
    const id = e.claimId ?? '';
    if (e.kind === 'node_placed') {
      const g = this.placer.get(id);
      if (!g) this.#fail(`${id} placed but not held`);
      else if (this.held.has(id)) this.#fail(`${id} granted twice`);
      else this.#keep(g);
    }
    if ((e.kind === 'claim_released' || e.kind === 'claim_lost') && !this.held.delete(id))
      this.#fail(`${e.kind} for ${id}, which the referee never saw granted`);
    this.check(`after ${e.kind} ${id}`, false);
  }

  #keep(g: Grant): void {
    const res: Record<string, number> = {};
    const pools: Record<string, number> = {};
    for (const [k, v] of Object.entries(g.allocation.resources ?? {})) (this.#poolNames.has(k) ? pools : res)[k] = v;
    this.held.set(g.claimId, {
      machine: g.machine,
      cpus: g.allocation.cpus,
      gpuIds: [...g.allocation.gpuIds],
      ramMb: g.allocation.ramMb ?? 0,
      res,
      pools,
    });
    const s = this.placer.snapshot();
    for (const p of s.pools) {
      const sum = this.#poolHeld(p.name);
      if (pools[p.name] && sum > p.total) this.#fail(`${g.claimId} took pool ${p.name} to ${sum} of ${p.total}`);
    }
  }

  /** Units of pool `name` the referee's holdings hold, those on machines still attached (`on`) when given. */
  #poolHeld(name: string, on?: Set<string>): number {
    let n = 0;
    for (const h of this.held.values()) if (!on || on.has(h.machine)) n += h.pools[name] ?? 0;
    return n;
  }

  /**
   * Checks every counter of the snapshot against the referee's books; `when` names the moment in a violation.
   * `settled` false (inside an event): a machine that left announces the loss of its claims one event at a time,
   * so holdings on a machine no longer attached are not yet counted against the placer's held list.
   */
  check(when: string, settled = true): void {
    this.checks++;
    const s = this.placer.snapshot();
    for (const m of s.machines) this.#checkMachine(when, m);
    const machines = new Set(s.machines.map((m) => m.name));
    for (const p of s.pools) {
      const sum = this.#poolHeld(p.name, machines);
      if (p.free < 0 || p.free > p.total) this.#fail(`${when}: pool ${p.name} free ${p.free} outside [0, ${p.total}]`);
      if (p.free !== Math.max(0, p.total - sum))
        this.#fail(`${when}: pool ${p.name} free ${p.free}, total ${p.total} − held ${sum} says otherwise`);
    }
    if (settled)
      for (const [id, h] of this.held)
        if (!machines.has(h.machine)) this.#fail(`${when}: ${id} held on gone ${h.machine}`);
    const ids = s.held.map((h) => h.claimId).sort();
    const mine = [...this.held].filter(([, h]) => machines.has(h.machine)).map(([id]) => id);
    mine.sort();
    if (ids.join() !== mine.join()) this.#fail(`${when}: placer holds ${ids.join()}, referee ${mine.join()}`);
  }

  #checkMachine(when: string, m: PlacerSnapshot['machines'][number]): void {
    const mine = [...this.held.values()].filter((h) => h.machine === m.name);
    const within = (what: string, free: number, total: number, held: number) => {
      if (free < 0 || free > total) this.#fail(`${when}: ${m.name} free ${what} ${free} outside [0, ${total}]`);
      if (free !== total - held) this.#fail(`${when}: ${m.name} free ${what} ${free} ≠ ${total} − held ${held}`);
    };
    within('cpus', m.free.cpus, m.total.cpus, sum(mine.map((h) => h.cpus)));
    const ids = mine.flatMap((h) => h.gpuIds);
    if (new Set(ids).size !== ids.length) this.#fail(`${when}: ${m.name} device held twice (${ids.join(',')})`);
    if (ids.some((d) => !m.total.gpuIds.includes(d))) this.#fail(`${when}: ${m.name} holds a device it lacks`);
    within('gpus', m.free.gpus, m.total.gpuIds.length, ids.length);
    const freeIds = m.total.gpuIds.filter((d) => !ids.includes(d));
    if (freeIds.join() !== m.freeGpuIds.join())
      this.#fail(`${when}: ${m.name} free gpu ids ${m.freeGpuIds.join(',')}, referee ${freeIds.join(',')}`);
    if (m.total.ramMb !== undefined)
      within('ram', m.free.ramMb ?? Number.NaN, m.total.ramMb, sum(mine.map((h) => h.ramMb)));
    const totals = m.total.resources ?? {};
    for (const h of mine)
      for (const k in h.res) if (!(k in totals)) this.#fail(`${when}: ${m.name} lent ${k}, which it does not have`);
    for (const k in totals) within(k, m.free.res?.[k] ?? Number.NaN, totals[k], sum(mine.map((h) => h.res[k] ?? 0)));
  }

  /** Books full: every machine and pool free = total, nothing held, nothing waiting. */
  checkFull(when: string): void {
    const s = this.placer.snapshot();
    if (s.held.length || this.held.size) this.#fail(`${when}: ${s.held.length} claim(s) still held`);
    if (s.waiting.length) this.#fail(`${when}: ${s.waiting.length} claim(s) still waiting`);
    for (const m of s.machines) {
      const full =
        m.free.cpus === m.total.cpus &&
        m.free.gpus === m.total.gpuIds.length &&
        m.free.ramMb === m.total.ramMb &&
        Object.entries(m.total.resources ?? {}).every(([k, v]) => m.free.res?.[k] === v);
      if (!full)
        this.#fail(`${when}: ${m.name} not full: free ${JSON.stringify(m.free)} of ${JSON.stringify(m.total)}`);
    }
    for (const p of s.pools) if (p.free !== p.total) this.#fail(`${when}: pool ${p.name} ${p.free} of ${p.total} free`);
  }

  /** Claims `ask` through the placer; `done` is told the grant or the error. */
  claim(ask: NormalizedAsk, signal: AbortSignal, done: (g: Grant | undefined, err?: unknown) => void): void {
    this.placer.claim(ask, { signal }).then(
      (g) => done(g),
      (err) => done(undefined, err),
    );
  }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
