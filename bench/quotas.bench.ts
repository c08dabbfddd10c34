/**
 * Tenant quotas and fair sharing in process (issue 22 target; docs/rules.md Q1, Q3): a tenant with 10,000 waiting
 * 1-core claims and free quota drains onto 1,000 full machines as their claims are released, against the same drain
 * with no quotas configured; and the drain with fair sharing on, two weighted tenants of 5,000 waiters each. Fresh
 * placers, runs interleaved, median of 3. Target: ≥ 10,000 grants/s with quotas (and with fair sharing).
 * Writes bench/results/quotas.json.
 * Run alone: `node bin/bench.js quotas`.
 */
import { setMaxListeners } from 'node:events';
import { EventBus } from '../src/events.js';
import { Placer } from '../src/placement/placer.js';
import type { TenantQuotas } from '../src/placement/quota.js';
import { benchAsk, median, report, type BenchRow } from './support.js';

const MACHINES = 1_000;
const WAITING = 10_000;
const signal = new AbortController().signal;
setMaxListeners(0, signal); // every waiter listens on this one signal

/**
 * Fills MACHINES of 10 cores with blockers (no tenant), queues WAITING claims of tenant alice, then releases every
 * blocker: each release grants one waiter. Grants/s of the drain.
 */
function drain(quotas: TenantQuotas | undefined, owners: readonly string[] = ['alice']): number {
  const events = new EventBus();
  const p = new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false },
    events,
    tenantQuotas: quotas,
  });
  for (let i = 0; i < MACHINES; i++)
    p.attach({ name: `m${i}`, labels: [], inventory: { cpus: 10, gpuIds: [] }, remote: true });
  const blockers: string[] = [];
  for (let i = 0; i < WAITING; i++) {
    const g = p.claimOrWait(benchAsk({ cpus: 1 }), { signal });
    if (g instanceof Promise) throw new Error('a blocker waited');
    blockers.push(g.claimId);
  }
  let granted = 0;
  events.subscribe((e) => {
    if (e.kind === 'node_placed') granted++;
  });
  for (let i = 0; i < WAITING; i++) void p.claim(benchAsk({ cpus: 1, owner: owners[i % owners.length] }), { signal });
  const t0 = performance.now();
  for (const id of blockers) p.release(id);
  const ms = performance.now() - t0;
  if (granted !== WAITING) throw new Error(`${granted} of ${WAITING} granted`);
  p.checkInvariants();
  return (granted / ms) * 1000;
}

const QUOTA: TenantQuotas = { alice: { nominal: { cpus: 20_000 * 10_000 } }, bob: { nominal: { cpus: 10_000 } } };
const FAIR: TenantQuotas = { alice: { nominal: {}, weight: 2 }, bob: { nominal: {}, weight: 1 } };
const plain: number[] = [];
const quota: number[] = [];
const fair: number[] = [];
drain(undefined); // warm-up
drain(QUOTA);
drain(FAIR, ['alice', 'bob']);
for (let i = 0; i < 3; i++) {
  plain.push(drain(undefined));
  quota.push(drain(QUOTA));
  fair.push(drain(FAIR, ['alice', 'bob']));
}
const ratio = median(quota) / median(plain);
const rows: BenchRow[] = [
  { name: `drain of ${WAITING} waiting 1-core claims, no quotas`, value: median(plain), unit: 'grants/s' },
  {
    name: `the same drain, its tenant under a quota with room`,
    value: median(quota),
    unit: 'grants/s',
    ratio,
    target: '>= 10,000 grants/s',
    met: median(quota) >= 10_000,
  },
  {
    name: `the same drain with fair sharing on, two weighted tenants of ${WAITING / 2} waiters each`,
    value: median(fair),
    unit: 'grants/s',
    ratio: median(fair) / median(plain),
    target: '>= 10,000 grants/s',
    met: median(fair) >= 10_000,
  },
];
report(
  'quotas',
  `tenant quotas and fair sharing: ${WAITING} waiters drain onto ${MACHINES} machines (ratio: ÷ without either)`,
  rows,
);
