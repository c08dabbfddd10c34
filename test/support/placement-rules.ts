/**
 * Test support: the placement rules (SPEC P2–P8, P11) as a simple reference model, checked against
 * an in-process Placer after every event and after every operation. It keeps its own books of
 * what was granted and recomputes, from the snapshot alone, what each rule demands — it never
 * looks at the placer's indexes. Violations are collected as readable strings.
 */
import { EventBus, type BerthEvent } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { MachineView, PlacerSnapshot } from '../../src/placement/snapshot.js';
import type { PriorityClasses } from '../../src/placement/priority.js';
import type { TenantQuotas } from '../../src/placement/quota.js';
import { UNIT } from '../../src/resources/quantity.js';
import type { Grant, MachineSpec, NormalizedAsk } from '../../src/placement/types.js';

type Amount = { cpus: number; gpus: number; ramMb?: number };
type Waiting = PlacerSnapshot['waiting'][number];

/** Seeded PRNG (mulberry32): the same seed gives the same run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const num = (claimId: string) => Number(claimId.slice(1));
const requires = (a: NormalizedAsk) => a.policy === 'require' && a.label !== '';
const eligible = (m: MachineView, a: NormalizedAsk) => !requires(a) || m.labels.includes(a.label);
const everHolds = (m: MachineView, a: Amount) =>
  a.cpus <= m.total.cpus &&
  a.gpus <= m.total.gpuIds.length &&
  (!a.ramMb || m.total.ramMb === undefined || a.ramMb <= m.total.ramMb);
const fitsBehind = (free: Amount, held: Amount, a: Amount) =>
  (a.cpus === 0 || a.cpus <= free.cpus - held.cpus) &&
  (a.gpus === 0 || a.gpus <= free.gpus - held.gpus) &&
  (!a.ramMb || free.ramMb === undefined || a.ramMb <= free.ramMb - (held.ramMb ?? 0));
const show = (a: Amount) => `${a.cpus}c/${a.gpus}g${a.ramMb ? `/${a.ramMb}MB` : ''}`;

/** What a claim for `ask` must wait for or get (P5, P11): the ask, or the ask cut to the best eligible machine. */
export function referenceFit(machines: MachineView[], ask: NormalizedAsk): { amount: Amount; clamped: boolean } {
  const whole = { cpus: ask.cpus, gpus: ask.gpus, ramMb: ask.ramMb };
  const pool = machines.filter((m) => eligible(m, ask));
  if (pool.length === 0 || pool.some((m) => everHolds(m, whole))) return { amount: whole, clamped: false };
  let best: Amount | undefined;
  for (const m of pool) {
    const t = m.total;
    const a = {
      cpus: Math.min(ask.cpus, t.cpus),
      gpus: Math.min(ask.gpus, t.gpuIds.length),
      ramMb: ask.ramMb === undefined ? undefined : t.ramMb === undefined ? ask.ramMb : Math.min(ask.ramMb, t.ramMb),
    };
    if (
      !best ||
      a.gpus > best.gpus ||
      (a.gpus === best.gpus && (a.cpus > best.cpus || (a.cpus === best.cpus && (a.ramMb ?? 0) > (best.ramMb ?? 0))))
    )
      best = a;
  }
  return { amount: best!, clamped: true };
}

/** Whether waiter `w` is served before claim `claimId` of priority `prio` and owner `owner`. */
type AheadOf = (w: Waiting, claimId: string, prio: number, owner?: string) => boolean;

/** What waiters ahead of `claimId` (priority `prio`) hold back on each machine (by the snapshot's reservedOn). */
function heldBackBefore(
  ahead: AheadOf,
  waiting: Waiting[],
  claimId: string,
  prio = 0,
  owner?: string,
): Map<string, Required<Amount>> {
  const out = new Map<string, Required<Amount>>();
  for (const w of waiting) {
    if (!ahead(w, claimId, prio, owner) || !w.reservedOn) continue;
    const cur = out.get(w.reservedOn) ?? { cpus: 0, gpus: 0, ramMb: 0 };
    const a = w.reason.wanted;
    out.set(w.reservedOn, { cpus: cur.cpus + a.cpus, gpus: cur.gpus + a.gpus, ramMb: cur.ramMb + (a.ramMb ?? 0) });
  }
  return out;
}

/** An in-process Placer under a referee. Claims go through `claim`, so the referee knows each ask. */
export class Refereed {
  readonly events = new EventBus();
  readonly placer: Placer;
  readonly violations: string[] = [];
  /** Claim ids in the order the placer granted them. */
  readonly grantOrder: string[] = [];
  readonly #asks = new Map<string, NormalizedAsk>();
  readonly #held = new Map<
    string,
    { machine: string; gpuIds: number[]; cpus: number; ramMb?: number; owner?: string }
  >();
  readonly #ever = new Set<string>();
  readonly #grants = new Map<string, Grant>();
  readonly #rejected = new Map<string, unknown>();
  /** Victims told (SPEC Q2) → their preemptor; a victim is told once. */
  readonly preempted = new Map<string, string>();
  /** Preemptor → the machine its victims are on. */
  readonly #preemptedOn = new Map<string, string>();
  /** Priority of each held claim, by id. */
  readonly #prio = new Map<string, number>();
  /** The claim id each node was last granted under (a requeued claim keeps its node, SPEC Q2). */
  readonly #idOf = new Map<string, string>();
  /** For a claim waiting again after preemption: the arrival number of the claim it first was (SPEC Q2 requeue). */
  readonly #first = new Map<string, number>();
  /** Preempted claims that waited again at their place: a sequence with none tests no requeue. */
  requeues = 0;

  /** Arrival number of claim `id`: its own (c1, c2, …), or for a requeued claim that of the claim it first was. */
  #num(id: string): number {
    return this.#first.get(id) ?? num(id);
  }
  #nodes = 0;

  /** `classes` / `preemptionGraceMs`: the placer's priority classes and preemption grace (SPEC Q1, Q2). */
  constructor(
    engine: MachineSpec,
    reconnectGraceMs = 1_000_000,
    opts: {
      classes?: PriorityClasses;
      preemptionGraceMs?: number;
      quotas?: TenantQuotas;
      /** Tenants' weights: fair sharing on (SPEC Q1); the referee orders tenants by its own count of their shares. */
      weights?: Record<string, number>;
    } = {},
  ) {
    let ids = 0; // ids in arrival order (c1, c2, …): the referee reads arrival order from them
    this.placer = new Placer({
      engine,
      events: this.events,
      reconnectGraceMs,
      newClaimId: () => `c${++ids}`,
      priorityClasses: opts.classes,
      preemptionGraceMs: opts.preemptionGraceMs,
      tenantQuotas: opts.weights
        ? Object.fromEntries(Object.entries(opts.weights).map(([t, weight]) => [t, { nominal: {}, weight }]))
        : opts.quotas,
    });
    this.#weights = opts.weights;
    this.#classes = opts.classes ?? {};
    this.#quotas = opts.quotas ?? {};
    this.events.subscribe((e) => this.#onEvent(e));
  }

  readonly #classes: PriorityClasses;
  readonly #quotas: TenantQuotas;
  readonly #weights?: Record<string, number>;
  /** Comparisons where tenants' shares, not arrival, decided the order: a sequence with none tests no fair sharing. */
  shareDecided = 0;

  /**
   * The queue order (SPEC Q1), written apart from order.ts and fair-share.ts: priority; then, with weights, the lower
   * weighted dominant share (max over cores, GPUs and memory of held / the attached machines' total, by the referee's
   * books, ÷ weight); then arrival.
   */
  #order(machines: PlacerSnapshot['machines']): AheadOf {
    const weights = this.#weights;
    const first = (a: string, b: string) => this.#num(a) < this.#num(b);
    if (!weights) return (w, claimId, prio) => w.priority > prio || (w.priority === prio && first(w.claimId, claimId));
    const total = { cpus: 0, gpus: 0, ram: 0 };
    for (const m of machines) {
      total.cpus += m.total.cpus;
      total.gpus += new Set(m.total.gpuIds).size;
      total.ram += m.total.ramMb ?? 0;
    }
    const shares = new Map<string, number>();
    const share = (owner: string) => {
      let v = shares.get(owner);
      if (v !== undefined) return v;
      const u = { cpus: 0, gpus: 0, ram: 0 };
      for (const h of this.#held.values()) {
        if ((h.owner ?? '') !== owner) continue;
        u.cpus += h.cpus;
        u.gpus += h.gpuIds.length;
        u.ram += h.ramMb ?? 0;
      }
      let dominant = 0;
      for (const k of ['cpus', 'gpus', 'ram'] as const)
        if (total[k] > 0 && u[k] > 0) dominant = Math.max(dominant, u[k] / total[k]);
      v = dominant / (weights[owner] ?? 1);
      shares.set(owner, v);
      return v;
    };
    return (w, claimId, prio, owner) => {
      if (w.priority !== prio) return w.priority > prio;
      const a = this.#asks.get(w.node)?.owner ?? '';
      const b = owner ?? '';
      const byArrival = first(w.claimId, claimId);
      if (a === b || share(a) === share(b)) return byArrival;
      if (share(a) < share(b) !== byArrival) this.shareDecided++;
      return share(a) < share(b);
    };
  }
  /** Waiters seen held by quota after an operation (SPEC Q3): a sequence that never meets its quotas tests nothing. */
  quotaHolds = 0;

  /** What tenant `owner` holds by the referee's books, in units (cpus, gpus, ram_mb). */
  #usedBy(owner: string): Record<string, number> {
    const u: Record<string, number> = { cpus: 0, gpus: 0, ram_mb: 0 };
    for (const h of this.#held.values()) {
      if (h.owner !== owner) continue;
      u.cpus += h.cpus * UNIT;
      u.gpus += h.gpuIds.length * UNIT;
      u.ram_mb += (h.ramMb ?? 0) * UNIT;
    }
    return u;
  }

  /**
   * The rule of SPEC Q3, written apart from quota.ts: with `extra` more for `owner`, does some tenant hold more than
   * nominal + borrowing limit, or some cohort draw more than its members lend? Returns what breaks, or undefined.
   */
  quotaBroken(
    owner?: string,
    extra: Record<string, number> = {},
    reserved = new Map<string, Record<string, number>>(),
  ): string | undefined {
    const used = new Map(Object.keys(this.#quotas).map((t) => [t, this.#usedBy(t)]));
    if (owner !== undefined && used.has(owner)) for (const k in extra) used.get(owner)![k] += extra[k];
    // as the placer: others' reclaims count against an ask of a member of their cohort, in what the ask takes and
    // the asker's nominal names
    const cohortOfOwner = owner === undefined ? undefined : this.#quotas[owner]?.cohort;
    const drawing = new Map([...used].map(([t, u]) => [t, { ...u }]));
    for (const [t, r] of reserved) {
      if (t === owner || this.#quotas[t]?.cohort !== cohortOfOwner || cohortOfOwner === undefined) continue;
      for (const k in r) if (extra[k] > 0 && k in this.#quotas[owner!].nominal) drawing.get(t)![k] += r[k];
    }
    for (const [t, q] of Object.entries(this.#quotas)) {
      for (const k in q.nominal) {
        const limit = q.cohort === undefined ? 0 : (q.borrowingLimit?.[k] ?? Infinity);
        if (used.get(t)![k] > q.nominal[k] + limit) return `tenant ${t} holds ${used.get(t)![k]} units of ${k}`;
      }
    }
    const cohorts = new Set(Object.values(this.#quotas).flatMap((q) => (q.cohort ? [q.cohort] : [])));
    for (const c of cohorts) {
      for (const k of ['cpus', 'gpus', 'ram_mb']) {
        let drawn = 0;
        let lent = 0;
        for (const [t, q] of Object.entries(this.#quotas)) {
          if (q.cohort !== c || !(k in q.nominal)) continue;
          const lend = Math.min(q.lendingLimit?.[k] ?? q.nominal[k], q.nominal[k]);
          lent += lend;
          drawn += Math.max(0, drawing.get(t)![k] - (q.nominal[k] - lend)); // with others' reclaims reserved
        }
        if (drawn > lent) return `cohort ${c} draws ${drawn} of ${lent} units of ${k}`;
      }
    }
    return undefined;
  }

  /**
   * When a reclaim is told, no borrower is taken below its nominal: what it holds less all its victims told for
   * reclaims stays at or above it in every resource they hold.
   */
  #belowNominal(when: string): void {
    for (const [t, q] of Object.entries(this.#quotas)) {
      const left = this.#usedBy(t);
      for (const [id, h] of this.#held) {
        if (h.owner !== t || !this.#reclaimVictims.has(id)) continue;
        left.cpus -= h.cpus * UNIT;
        left.gpus -= h.gpuIds.length * UNIT;
        left.ram_mb -= (h.ramMb ?? 0) * UNIT;
      }
      for (const k in q.nominal) {
        const had = this.#usedBy(t)[k];
        if (left[k] < had && left[k] < q.nominal[k])
          this.#fail(
            `${when}: reclaims would take ${t} to ${left[k]} units of ${k}, below its nominal ${q.nominal[k]}`,
          );
      }
    }
  }

  /** Victims told and still held: their holders may give them back. */
  told(): string[] {
    return [...this.preempted.keys()].filter((id) => this.#held.has(id));
  }

  /** Claims `ask` (its node is made unique); returns the node name, the key for `outcome`. */
  claim(ask: Omit<NormalizedAsk, 'node' | 'env'>, signal: AbortSignal): string {
    const node = `n${++this.#nodes}`;
    const full: NormalizedAsk = { ...ask, node, env: {} };
    this.#asks.set(node, full);
    this.placer.claim(full, { signal }).then(
      (g) => this.#grants.set(node, g),
      (err) => this.#rejected.set(node, err),
    );
    return node;
  }

  /**
   * The holder of told claim `id` gives it back to wait again at its place (SPEC Q2: Release with requeue); the new
   * grant is that node's outcome. `signal` abandons the new wait.
   */
  makeRoom(id: string, signal: AbortSignal): void {
    const node = [...this.#idOf].find(([, c]) => c === id)?.[0];
    if (node === undefined) return this.#fail(`make room for ${id}, which the referee never saw granted`);
    const again = this.placer.requeueOnPreempt(id, { signal: () => signal });
    this.placer.makeRoom(id);
    again.granted.then(
      (g) => this.#grants.set(node, g),
      (err) => this.#rejected.set(node, err),
    );
  }

  /**
   * The holder of told claim `id` gives it back and claims the same work again at once (its ask and node, as an
   * engine re-submitting after a preemption): the new claim is that node's outcome. `signal` abandons it.
   */
  resubmit(id: string, signal: AbortSignal): void {
    const node = [...this.#idOf].find(([, c]) => c === id)?.[0];
    const ask = node === undefined ? undefined : this.#asks.get(node);
    if (!node || !ask) return this.#fail(`re-submit ${id}, which the referee never saw granted`);
    this.placer.release(id);
    this.placer.claim(ask, { signal }).then(
      (g) => this.#grants.set(node, g),
      (err) => this.#rejected.set(node, err),
    );
  }

  /** The grant or rejection a claim has had so far. */
  outcome(node: string): { grant?: Grant; error?: unknown } {
    return { grant: this.#grants.get(node), error: this.#rejected.get(node) };
  }

  /** Ids of the claims held now, by the referee's own books. */
  held(): string[] {
    return [...this.#held.keys()];
  }

  #fail(what: string): void {
    if (this.violations.length < 20) this.violations.push(what);
  }

  #onEvent(e: BerthEvent): void {
    try {
      this.placer.checkInvariants();
    } catch (err) {
      this.#fail(`after ${e.kind}: ${(err as Error).message}`);
    }
    const id = e.claimId ?? '';
    if (e.kind === 'node_queued' && e.queued?.requeued) {
      const before = this.#idOf.get(e.node ?? '');
      if (before === undefined || this.#held.has(before)) this.#fail(`${id} requeued, but ${before} is still held`);
      else this.#first.set(id, this.#num(before)); // it waits at the place of the claim it was
      this.requeues++;
    }
    if (e.kind === 'node_placed') this.#placed(id, this.#asks.get(e.node!)!);
    if (e.kind === 'claim_preempted') {
      if (e.reclaim) this.#reclaimed(id, e.preemptor ?? '');
      else this.#told(id, e.preemptor ?? '', e.machine ?? '');
    }
    if (e.kind === 'claim_released' || e.kind === 'claim_lost') {
      if (!this.#held.delete(id)) this.#fail(`${e.kind} for ${id}, which the referee never saw granted`);
    }
  }

  /** Reclaimers (SPEC Q3) → their tenant; victims told for a reclaim. */
  readonly #reclaimers = new Map<string, string>();
  readonly #reclaimVictims = new Set<string>();
  /** Victims told for reclaims: a sequence with none tests no reclaim. */
  reclaims = 0;

  /**
   * A reclaim (SPEC Q3) must be by a waiter held by quota, of a victim held by another member of its cohort that
   * borrows, of no higher priority, told once.
   */
  #reclaimed(victim: string, by: string): void {
    this.reclaims++;
    if (this.preempted.has(victim)) return this.#fail(`${victim} told twice (by ${this.preempted.get(victim)}, ${by})`);
    this.preempted.set(victim, by);
    this.#reclaimVictims.add(victim);
    const w = this.placer.snapshot().waiting.find((x) => x.claimId === by);
    if (!w) return this.#fail(`${victim} reclaimed by ${by}, which is not waiting`);
    if (!w.reason.detail.includes('held by quota')) this.#fail(`${by} reclaims though quota does not hold it`);
    const a = this.#asks.get(w.node)?.owner;
    const h = this.#held.get(victim);
    if (!h || a === undefined) return this.#fail(`${victim} reclaimed by ${by} (of ${a}) but not held`);
    const qa = this.#quotas[a];
    const qb = h.owner === undefined ? undefined : this.#quotas[h.owner];
    if (!qa?.cohort || h.owner === a || qb?.cohort !== qa.cohort)
      this.#fail(`${victim} of ${h.owner} reclaimed by ${by} of ${a}: not another member of its cohort`);
    if ((this.#prio.get(victim) ?? 0) > w.priority) this.#fail(`${victim} reclaimed by lower ${by}`);
    this.#reclaimers.set(by, a);
    this.#belowNominal(`reclaim of ${victim} by ${by}`);
  }

  /**
   * A preemption (SPEC Q2) must be by a waiting claim of a class that may preempt, of a victim strictly lower, held,
   * told once, and all of one preemptor's victims on one machine.
   */
  #told(victim: string, by: string, machine: string): void {
    if (this.preempted.has(victim))
      return this.#fail(`${victim} preempted twice (by ${this.preempted.get(victim)}, ${by})`);
    this.preempted.set(victim, by);
    const w = this.placer.snapshot().waiting.find((x) => x.claimId === by);
    if (!w) return this.#fail(`${victim} preempted by ${by}, which is not waiting`);
    const cls = w.priorityClass ? this.#classes[w.priorityClass] : undefined;
    if (!cls || cls.preemption === 'never') this.#fail(`${by} (class ${w.priorityClass ?? 'none'}) may not preempt`);
    const vp = this.#prio.get(victim);
    if (vp === undefined || !this.#held.has(victim)) return this.#fail(`${victim} preempted but not held`);
    if (vp >= w.priority) this.#fail(`${victim} (priority ${vp}) preempted by ${by} of priority ${w.priority}`);
    if (this.#held.get(victim)!.machine !== machine) this.#fail(`${victim} preempted on ${machine}, held elsewhere`);
    const on = this.#preemptedOn.get(by);
    if (on !== undefined && on !== machine) this.#fail(`${by} preempted on ${on} and ${machine}`);
    this.#preemptedOn.set(by, machine);
    // damping (SPEC Q2): one work — owner, run and node; a requeued claim keeps its node — at most the limit (3, the
    // default) per window, which every sequence here fits in
    const node = [...this.#idOf].find(([, c]) => c === victim)?.[0] ?? '';
    const ask = this.#asks.get(node);
    const work = `${ask?.owner ?? ''}/${ask?.runId ?? ''}/${node}`;
    const times = (this.#worked.get(work) ?? 0) + 1;
    this.#worked.set(work, times);
    if (times > 3) this.#fail(`${victim} (work ${work}) preempted ${times} times, past the damping limit of 3`);
  }

  /** Preemptions per work (owner/run/node), for the damping check. */
  readonly #worked = new Map<string, number>();

  /**
   * A grant must be new, eligible, of the fitted amount, on free devices, and leave older reservations room (P2–P8).
   */
  #placed(id: string, ask: NormalizedAsk): void {
    const g = this.placer.get(id);
    if (!g) return this.#fail(`${id} placed but not held`);
    if (this.#ever.has(id)) return this.#fail(`${id} granted twice`);
    this.#ever.add(id);
    this.grantOrder.push(id);
    const s = this.placer.snapshot();
    const m = s.machines.find((x) => x.name === g.machine);
    if (!m) return this.#fail(`${id} granted on ${g.machine}, which is not attached`);
    if (!eligible(m, ask)) this.#fail(`${id} requires '${ask.label}' but landed on ${m.name}`);
    if (g.fellBack !== (ask.label !== '' && !m.labels.includes(ask.label)))
      this.#fail(`${id} fellBack=${g.fellBack} on ${m.name}`);
    const fit = referenceFit(s.machines, ask);
    const got = { cpus: g.allocation.cpus, gpus: g.allocation.gpuIds.length, ramMb: g.allocation.ramMb };
    if (show(got) !== show(fit.amount) || g.clamped !== fit.clamped) {
      this.#fail(
        `${id} asked ${show(ask)}: granted ${show(got)} clamped=${g.clamped}, ` +
          `rules say ${show(fit.amount)} clamped=${fit.clamped}`,
      );
    }
    for (const [other, h] of this.#held) {
      if (h.machine === m.name && h.gpuIds.some((d) => g.allocation.gpuIds.includes(d)))
        this.#fail(`${id} and ${other} both hold a device of ${m.name}`);
    }
    if (g.allocation.gpuIds.some((d) => !m.total.gpuIds.includes(d)))
      this.#fail(`${id} holds a device ${m.name} does not have`);
    const prio = g.ask.priority ?? 0; // as the placer resolved it (a class's value)
    const order = this.#order(s.machines); // this grant is not in the referee's books yet: shares as it was chosen
    const back = heldBackBefore(order, s.waiting, id, prio, ask.owner).get(m.name);
    if (
      back &&
      !fitsBehind(
        {
          cpus: m.free.cpus + got.cpus,
          gpus: m.free.gpus + got.gpus,
          ramMb: m.free.ramMb === undefined ? undefined : m.free.ramMb + (got.ramMb ?? 0),
        },
        back,
        got,
      )
    ) {
      this.#fail(
        `${id} (${show(got)}) took ${m.name} past what older waiters hold back there (${show(back)}; ` +
          `free now ${show(m.free)})`,
      );
    }
    const engine = s.machines.find((x) => !x.remote);
    if (ask.label === '' && engine && engine.name !== m.name) {
      const before = heldBackBefore(order, s.waiting, id, prio, ask.owner).get(engine.name);
      if (fitsBehind(engine.free, before ?? { cpus: 0, gpus: 0 }, got)) {
        this.#fail(`${id} (${show(got)}) went to ${m.name} though the engine could take it (P2)`);
      }
    }
    this.#idOf.set(ask.node, id);
    this.#held.set(id, {
      machine: m.name,
      gpuIds: g.allocation.gpuIds,
      cpus: got.cpus,
      ramMb: got.ramMb,
      owner: ask.owner,
    });
    const over = this.quotaBroken();
    if (over) this.#fail(`${id} granted to ${ask.owner}: ${over} (SPEC Q3)`);
    this.#prio.set(id, g.ask.priority ?? 0);
  }

  /**
   * After an operation has settled: books match the referee's; every waiter waits for its fitted
   * amount, reserves on a machine that could hold it, and no waiter is left while a machine could
   * hold it behind what older waiters hold back there (P6, P7, P11); grants reached their callers.
   */
  checkSettled(when: string): void {
    const s = this.placer.snapshot();
    for (const m of s.machines) {
      let cpus = 0;
      let gpus = 0;
      let ram = 0;
      for (const h of this.#held.values()) {
        if (h.machine !== m.name) continue;
        cpus += h.cpus;
        gpus += h.gpuIds.length;
        ram += h.ramMb ?? 0;
      }
      const free = {
        cpus: m.total.cpus - cpus,
        gpus: m.total.gpuIds.length - gpus,
        ramMb: m.total.ramMb === undefined ? undefined : m.total.ramMb - ram,
      };
      if (show(free) !== show(m.free) || m.free.cpus < 0 || m.free.gpus < 0 || (m.free.ramMb ?? 0) < 0) {
        this.#fail(`${when}: ${m.name} free ${show(m.free)}, referee's books say ${show(free)}`);
      }
    }
    const heldIds = s.held.map((h) => h.claimId).sort();
    if (heldIds.join() !== [...this.#held.keys()].sort().join())
      this.#fail(`${when}: placer holds ${heldIds.join()}, referee ${[...this.#held.keys()].sort().join()}`);
    const w0 = s.waiting;
    const order = this.#order(s.machines);
    const ownerOf = (w: Waiting) => this.#asks.get(w.node)?.owner;
    if (w0.some((w, i) => i > 0 && !order(w0[i - 1], w.claimId, w.priority, ownerOf(w))))
      this.#fail(`${when}: waiting list not in queue order (priority, then share, then arrival)`);
    // what waiters reclaiming hold reserved of their tenant's quota (SPEC Q3), by tenant, in units
    const reserved = new Map<string, Record<string, number>>();
    for (const w of s.waiting) {
      const t = this.#reclaimers.get(w.claimId);
      if (t === undefined) continue;
      const r = reserved.get(t) ?? { cpus: 0, gpus: 0, ram_mb: 0 };
      r.cpus += w.reason.wanted.cpus * UNIT;
      r.gpus += w.reason.wanted.gpus * UNIT;
      r.ram_mb += (w.reason.wanted.ramMb ?? 0) * UNIT;
      reserved.set(t, r);
    }
    const back = new Map<string, Required<Amount>>();
    for (const w of s.waiting) {
      const ask = this.#asks.get(w.node)!;
      const fit = referenceFit(s.machines, ask);
      if (show(w.reason.wanted) !== show(fit.amount) || w.clamped !== fit.clamped) {
        this.#fail(
          `${when}: ${w.claimId} asked ${show(ask)}, waits for ${show(w.reason.wanted)} clamped=${w.clamped}; ` +
            `rules say ${show(fit.amount)}`,
        );
      }
      const wanted = w.reason.wanted;
      const extra = { cpus: wanted.cpus * UNIT, gpus: wanted.gpus * UNIT, ram_mb: (wanted.ramMb ?? 0) * UNIT };
      const overQuota = this.quotaBroken(ask.owner, extra, reserved);
      const heldByQuota = w.reason.detail.includes('held by quota');
      if (heldByQuota !== Boolean(overQuota)) {
        this.#fail(`${when}: ${w.claimId} of ${ask.owner}: held by quota ${heldByQuota}, the rule says ${overQuota}`);
      }
      if (heldByQuota) {
        this.quotaHolds++;
        if (w.reservedOn) this.#fail(`${when}: ${w.claimId} is held by quota but reserves on ${w.reservedOn}`);
        continue; // quota, not capacity, holds it: it reserves nothing and may be left while machines could hold it
      }
      const able = s.machines.filter((m) => eligible(m, ask) && everHolds(m, w.reason.wanted));
      if (w.reservedOn && !able.some((m) => m.name === w.reservedOn))
        this.#fail(`${when}: ${w.claimId} reserves on ${w.reservedOn}, which cannot hold it`);
      if (!w.reservedOn && able.length)
        this.#fail(`${when}: ${w.claimId} reserves nowhere though ${able[0].name} could hold it`);
      for (const m of s.machines) {
        if (!eligible(m, ask)) continue;
        if (fitsBehind(m.free, back.get(m.name) ?? { cpus: 0, gpus: 0, ramMb: 0 }, w.reason.wanted)) {
          this.#fail(
            `${when}: ${w.claimId} (${show(w.reason.wanted)}) left waiting though ${m.name} (free ` +
              `${show(m.free)}, held back ${show(back.get(m.name) ?? { cpus: 0, gpus: 0 })}) could hold it`,
          );
        }
      }
      if (w.reservedOn) {
        const cur = back.get(w.reservedOn) ?? { cpus: 0, gpus: 0, ramMb: 0 };
        const a = w.reason.wanted;
        back.set(w.reservedOn, { cpus: cur.cpus + a.cpus, gpus: cur.gpus + a.gpus, ramMb: cur.ramMb + (a.ramMb ?? 0) });
      }
    }
    for (const [node, g] of this.#grants) {
      if (!this.#ever.has(g.claimId)) this.#fail(`${when}: ${node} resolved with ${g.claimId}, never announced`);
    }
  }
}
