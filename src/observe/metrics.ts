/**
 * Prometheus metrics (issue 13 item 2), served at /metrics when `--metrics-listen` is given.
 * Counters and histograms follow the event bus; gauges are read from the snapshot at scrape time,
 * so they can never drift from the books. Units: seconds, bytes (RAM: MB × 1 048 576), cores, GPUs; named
 * resources and pools as plain quantities (issue 23), one series per name a machine or the config has.
 */
import type { TenantView } from '../placement/quota.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BerthEvent, EventBus } from '../events.js';
import { PROVISIONED_STATES } from '../placement/provisioner.js';
import type { PlacerSnapshot } from '../placement/snapshot.js';
import { fromUnits, type Named } from '../resources/quantity.js';

/** What the gauges are read from at scrape time. */
export interface MetricsSource {
  snapshot(): PlacerSnapshot;
  callsInFlight(): number;
}

const MB = 1024 * 1024;
const bytes = (mb: number | undefined) => (mb === undefined ? undefined : mb * MB);

/** Claim release reasons (Placer.release `why`) as label values; anything else is "other". */
const RELEASE_OUTCOMES = new Set([
  'released',
  'stream_ended',
  'run_ended',
  'abandoned',
  'lost',
  'half_closed',
  'preempted',
  'cancelled',
  'hold_ran_out',
]);

/** Turns a release reason into a bounded label value (e.g. "stream ended" → "stream_ended"). */
export function outcomeLabel(why: string | undefined): string {
  const v = (why ?? '')
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_');
  return RELEASE_OUTCOMES.has(v) ? v : 'other';
}

/** berth's metrics on their own registry, plus Node process metrics (`process_*`, `nodejs_*`). */
export class BerthMetrics {
  readonly registry = new Registry();
  readonly #unsubscribe: () => void;
  readonly #decision: Histogram;

  /** Subscribes to `events` and registers every metric; `source` feeds the gauges at scrape time. */
  constructor(events: EventBus, source: MetricsSource) {
    const r = this.registry;
    collectDefaultMetrics({ register: r });
    const counter = (name: string, help: string, labelNames: string[] = []) =>
      new Counter({ name, help, labelNames, registers: [r] });
    const histogram = (name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, buckets, registers: [r] });
    const granted = counter(
      'berth_claims_granted_total',
      'Claims granted, by machine, clamped and fell_back (SPEC P4, P5).',
      ['machine', 'clamped', 'fell_back'],
    );
    const queued = counter('berth_claims_queued_total', 'Claims that had to wait (node_queued, SPEC P6).');
    const released = counter(
      'berth_claims_released_total',
      'Held claims given back, by outcome: released, half_closed, stream_ended, run_ended, abandoned, lost, ' +
        'hold_ran_out, preempted, other (SPEC P8, S3, Q2).',
      ['outcome'],
    );
    const abandoned = counter(
      'berth_claims_abandoned_total',
      'Waiting claims abandoned before a grant (cancel, disconnect, on_oversize fail).',
    );
    const clamped = counter(
      'berth_claims_clamped_total',
      'Asks cut down to the best real machine, by the first dimension cut (SPEC P5).',
      ['limiting'],
    );
    const wait = histogram(
      'berth_claim_wait_seconds',
      'Time from ask to grant, in seconds (0 for an immediate grant).',
      [0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120, 600, 3600],
    );
    this.#decision = histogram(
      'berth_placement_decision_seconds',
      'Time the placer takes to decide an ask (grant now or queue), in seconds.',
      [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
    );
    const calls = counter(
      'berth_calls_total',
      'Calls ended, by outcome (result, failure, cancelled, error) and failure type.',
      ['outcome', 'failure_type'],
    );
    const awaiting = counter(
      'berth_claims_awaiting_holder_total',
      'Claims whose stream broke without Release and that awaited their holder for their hold (SPEC S3).',
    );
    const resumed = counter('berth_claims_resumed_total', 'Awaiting claims taken back by their holder (SPEC S3).');
    const preempted = counter(
      'berth_claims_preempted_total',
      'Held claims told to make room for a higher-priority claim (SPEC Q2).',
    );
    const retried = counter('berth_call_retries_total', 'Calls placed again after their machine was lost (SPEC S8).');
    const ranOut = counter(
      'berth_claim_holds_ran_out_total',
      'Awaiting claims given back because their hold ran out before their holder came back (SPEC S3).',
    );
    const attaches = counter('berth_worker_attaches_total', 'Worker attaches (SPEC W1).');
    const detaches = counter('berth_worker_detaches_total', 'Worker detaches (SPEC W3).');
    const disconnects = counter('berth_worker_disconnects_total', 'Worker streams broken and held (SPEC S2).');
    const reconnects = counter('berth_worker_reconnects_total', 'Held workers that came back within the hold.');
    const expired = counter('berth_worker_holds_expired_total', 'Held workers whose hold ran out (calls failed).');
    this.#unsubscribe = events.subscribe((e: BerthEvent) => {
      switch (e.kind) {
        case 'node_placed':
          granted.inc({
            machine: e.machine ?? '',
            clamped: String(Boolean(e.clamped)),
            fell_back: String(Boolean(e.fellBack)),
          });
          wait.observe((e.durationMs ?? 0) / 1000);
          break;
        case 'node_queued':
          queued.inc();
          break;
        case 'node_clamped':
          clamped.inc({ limiting: e.limiting || 'none' });
          break;
        case 'node_abandoned':
          abandoned.inc();
          break;
        case 'claim_released':
          released.inc({ outcome: outcomeLabel(e.outcome) });
          if (e.outcome === 'hold_ran_out') ranOut.inc();
          break;
        case 'claim_awaiting_holder':
          awaiting.inc();
          break;
        case 'claim_resumed':
          resumed.inc();
          break;
        case 'claim_preempted':
          preempted.inc();
          break;
        case 'call_retrying':
          retried.inc();
          break;
        case 'claim_lost':
          released.inc({ outcome: 'lost' });
          break;
        case 'call_finished':
        case 'call_cancelled':
          calls.inc({
            outcome: e.outcome ?? (e.kind === 'call_cancelled' ? 'cancelled' : 'result'),
            failure_type: e.failureType ?? '',
          });
          break;
        case 'worker_attached':
          attaches.inc();
          break;
        case 'worker_detached':
          detaches.inc();
          break;
        case 'worker_disconnected':
          disconnects.inc();
          break;
        case 'worker_reconnected':
          reconnects.inc();
          break;
        case 'worker_hold_expired':
          expired.inc();
          break;
        default:
          break;
      }
    });
    this.#gauges(source);
  }

  /** Records one placement decision that took `ms` milliseconds. */
  decided(ms: number): void {
    this.#decision.observe(ms / 1000);
  }

  /** The exposition text (`text/plain; version=0.0.4`). */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** Stops following the event bus. */
  close(): void {
    this.#unsubscribe();
  }

  #gauges(source: MetricsSource): void {
    const r = this.registry;
    const perMachine = (
      name: string,
      help: string,
      pick: (m: PlacerSnapshot['machines'][number]) => number | undefined,
    ) => ({ name, help, labelNames: ['machine'], registers: [r], pick });
    const specs = [
      perMachine('berth_machine_cpus', 'Cores a machine has.', (m) => m.total.cpus),
      perMachine('berth_machine_cpus_free', 'Cores free on a machine now.', (m) => m.free.cpus),
      perMachine('berth_machine_gpus', 'GPUs a machine has.', (m) => m.total.gpuIds.length),
      perMachine('berth_machine_gpus_free', 'GPUs free on a machine now.', (m) => m.free.gpus),
      perMachine('berth_machine_ram_bytes', 'Memory a machine has, in bytes (absent when not limited).', (m) =>
        bytes(m.total.ramMb),
      ),
      perMachine(
        'berth_machine_ram_free_bytes',
        'Memory free on a machine now, in bytes (absent when not limited).',
        (m) => bytes(m.free.ramMb),
      ),
      perMachine('berth_machine_claims', 'Claims held on a machine now.', (m) => m.claims),
    ];
    let snap: PlacerSnapshot | undefined;
    const current = () => (snap ??= source.snapshot());
    // prom-client collects each metric in registration order: the first gauge takes the snapshot, the last drops it.
    new Gauge({
      name: 'berth_machines',
      help: 'Machines attached, by kind (engine, worker).',
      labelNames: ['kind'],
      registers: [r],
      collect() {
        snap = undefined;
        const ms = current().machines;
        this.reset();
        this.set({ kind: 'engine' }, ms.filter((m) => !m.remote).length);
        this.set({ kind: 'worker' }, ms.filter((m) => m.remote).length);
      },
    });
    for (const s of specs) {
      new Gauge({
        name: s.name,
        help: s.help,
        labelNames: s.labelNames,
        registers: s.registers,
        collect() {
          this.reset();
          for (const m of current().machines) {
            const v = s.pick(m);
            if (v !== undefined) this.set({ machine: m.name }, v);
          }
        },
      });
    }
    new Gauge({
      name: 'berth_machine_gpu_share_held',
      help: 'The share held of a GPU held in shares (SPEC P14), in (0, 1); absent for GPUs free or held whole.',
      labelNames: ['machine', 'gpu'],
      registers: [r],
      collect() {
        this.reset();
        for (const m of current().machines)
          for (const [id, units] of m.gpuShares) this.set({ machine: m.name, gpu: String(id) }, fromUnits(units));
      },
    });
    const named = (name: string, help: string, pick: (m: PlacerSnapshot['machines'][number]) => Named | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['machine', 'resource'],
        registers: [r],
        collect() {
          this.reset(); // only names the books hold now: a machine that went takes its series along
          for (const m of current().machines) {
            const have = pick(m) ?? {};
            for (const res of Object.keys(m.total.resources ?? {}))
              this.set({ machine: m.name, resource: res }, fromUnits(have[res] ?? 0));
          }
        },
      });
    named('berth_resource_total', 'Named resources a machine has (issue 23), e.g. trainer.', (m) => m.total.resources);
    named('berth_resource_free', 'Named resources free on a machine now (issue 23).', (m) => m.free.res);
    const pool = (name: string, help: string, pick: (p: PlacerSnapshot['pools'][number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['pool'],
        registers: [r],
        collect() {
          this.reset();
          for (const p of current().pools) this.set({ pool: p.name }, fromUnits(pick(p)));
        },
      });
    pool(
      'berth_pool_total',
      'Size of a cluster-wide pool from the config (issue 23), e.g. license/matlab.',
      (p) => p.total,
    );
    pool('berth_pool_free', 'What is free of a cluster-wide pool now (issue 23).', (p) => p.free);
    const tenant = (name: string, help: string, pick: (x: TenantView['resources'][number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['tenant', 'resource'],
        registers: [r],
        collect() {
          this.reset();
          for (const t of current().tenants ?? [])
            for (const x of t.resources) this.set({ tenant: t.tenant, resource: x.name }, pick(x));
        },
      });
    tenant('berth_tenant_used', 'What a tenant holds now of a resource its quota names (SPEC Q3).', (x) => x.used);
    tenant('berth_tenant_nominal', "A tenant's nominal quota of a resource (SPEC Q3).", (x) => x.nominal);
    new Gauge({
      name: 'berth_tenant_share',
      help: "A tenant's weighted dominant share, with fair sharing on (SPEC Q1): lowest is served first.",
      labelNames: ['tenant'],
      registers: [r],
      collect() {
        this.reset();
        for (const t of current().tenants ?? []) if (t.fair) this.set({ tenant: t.tenant }, t.fair.share);
      },
    });
    new Gauge({
      name: 'berth_claims_waiting',
      help: 'Claims waiting now (SPEC P6).',
      registers: [r],
      collect() {
        this.set(current().waiting.length);
      },
    });
    new Gauge({
      name: 'berth_claims_waiting_by_priority',
      help: 'Claims waiting now, by priority (SPEC Q1).',
      labelNames: ['priority'],
      registers: [r],
      collect() {
        this.reset();
        const by = new Map<number, number>();
        for (const w of current().waiting) by.set(w.priority ?? 0, (by.get(w.priority ?? 0) ?? 0) + 1);
        for (const [priority, n] of by) this.set({ priority: String(priority) }, n);
      },
    });
    new Gauge({
      name: 'berth_claims_held',
      help: 'Claims held now.',
      registers: [r],
      collect() {
        this.set(current().held.length);
      },
    });
    new Gauge({
      name: 'berth_calls_in_flight',
      help: 'Calls running now.',
      registers: [r],
      collect() {
        this.set(source.callsInFlight());
      },
    });
    new Gauge({
      name: 'berth_provisioner_machines',
      help: 'Machines a provisioner started, by state (SPEC V2, V3).',
      labelNames: ['provisioner', 'state'],
      registers: [r],
      collect() {
        this.reset();
        for (const p of current().provisioners) {
          // every state of every provisioner has a series, 0 when empty: a series that vanishes is not a 0
          for (const state of PROVISIONED_STATES) this.set({ provisioner: p.name, state }, 0);
          for (const m of p.machines) this.inc({ provisioner: p.name, state: m.state });
        }
        snap = undefined;
      },
    });
  }
}
