/**
 * The placement grid's workload (issue 9 item 4), the same every run, built through Placer's public
 * API only: 16-cpu machines, the even ones with 4 GPUs, every 10th labelled `gpu`; a quarter held
 * whole (i % 8 = 3 or 6), the rest each pinned by one small claim (1 cpu, plus 1 GPU on GPU machines).
 * Waiters in turn {16 cpu}, {1 cpu, 4 gpu}, {16 cpu, require gpu}, {8 cpu, 4 gpu, prefer gpu}: none
 * fits anywhere, all can be held by some machine. Measured asks in turn {2 cpu, 1 gpu}, {4 cpu},
 * {1 cpu, 2 gpu, prefer gpu}, {8 cpu}; each must be granted at once.
 *
 * The mixed workload (`mix`, issue 23 item 5) is the same grid in the other dimensions: every other machine
 * memory-limited (i % 4 < 2: 64 GB, its pin holding 8 GB), the rest offering `trainer: 2` (its pin holding one), and
 * every fourth waiter and every fourth measured ask carries memory, a named resource or a GPU share in turn: waiters
 * {16 cpu, 16 GB}, {16 cpu, trainer 1}, {16 cpu, 0.5 gpu}; measured {4 cpu, 8 GB}, {2 cpu, trainer 1}, {1 cpu, 0.5 gpu}.
 * It also carries priorities (SPEC Q1, issue 22): waiter i has priority i % 5 and every other measured ask priority 2,
 * so a measured ask fits behind only the waiters ahead of it (the reservation walk), not the whole ledger, and two
 * tenants under quotas with room (SPEC Q3) and weights (fair sharing on, SPEC Q1): waiters and measured asks alternate
 * between them, so every grant is checked against a quota, counted, and ordered by share, and nothing is held by one.
 */
import { EventBus } from '../../src/events.js';
import { Placer } from '../../src/placement/placer.js';
import type { LabelPolicy, NormalizedAsk } from '../../src/placement/types.js';

const ask = (
  cpus: number,
  gpus: number,
  label = '',
  policy: LabelPolicy = 'prefer',
  more: Partial<NormalizedAsk> = {},
): NormalizedAsk => ({
  cpus,
  gpus,
  label,
  policy,
  node: 'bench',
  runId: 'bench',
  env: {},
  ...more,
});
/** 1 in units of 1e-4 (resources/quantity.ts). */
const U = 10_000;
/**
 * Two tenants whose quotas never bind here, weighted so fair sharing is on (SPEC Q1): the quota check, the counting
 * and the order between tenants by share are what is measured.
 */
const TENANTS = {
  'tenant-a': { nominal: { cpus: 1e8 * U, gpus: 1e8 * U }, weight: 2 },
  'tenant-b': { nominal: { cpus: 1e8 * U, gpus: 1e8 * U }, weight: 1 },
};
const ram = (ramMb: number) => ({ ramMb });
const trainer = { resources: { trainer: U } };
const half = { gpuShare: U / 2 };

/** Every fourth of `plain`'s asks replaced by the next of `odd` in turn: a list of 4 × odd.length asks. */
function mixIn(plain: NormalizedAsk[], odd: NormalizedAsk[]): NormalizedAsk[] {
  return Array.from({ length: 4 * odd.length }, (_, i) => (i % 4 === 3 ? odd[i >> 2] : plain[i % plain.length]));
}

/** Wall clock in ms (fractional). */
export const now = () => Number(process.hrtime.bigint()) / 1e6;

const mustWait = (what: string) => () => {
  throw new Error(`bench workload broken: ${what} waited`);
};

/** A placer holding the workload and its queued waiters. */
export interface Workload {
  placer: Placer;
  /** Waiters queued (= asked for unless the budget was hit). */
  queued: number;
  /** Time to queue the waiters, ms. */
  enqueueMs: number;
  /** The budget was hit while queueing. */
  timedOut: boolean;
  /** Time in `attach` per machine (the calls alone, not the claims setting the machine up), µs. */
  attachUs: number;
}

/**
 * Builds `machines` machines and queues `waiters` waiters; stops queueing after `budgetMs`. `mix`: the mixed
 * workload (memory, named resources, shares; see the header).
 */
export async function buildWorkload(
  machines: number,
  waiters: number,
  budgetMs: number,
  mix = false,
): Promise<Workload & { mix: boolean }> {
  const placer = new Placer({
    engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false },
    events: new EventBus(),
    tenantQuotas: mix ? TENANTS : undefined,
  });
  const signal = new AbortController().signal;
  // Attach machines one by one; everything else is fully held while machine i is set up, so each
  // claim lands on machine i. Blockers (the rest of a pinned machine) are released at the end.
  const blockers: string[] = [];
  let attachMs = 0;
  for (let i = 0; i < machines; i++) {
    const gpus = i % 2 === 0 ? 4 : 0;
    const limited = mix && i % 4 < 2;
    const named = mix && i % 4 >= 2;
    const t = now();
    placer.attach({
      name: `w${i}`,
      labels: i % 10 === 0 ? ['gpu'] : [],
      remote: true,
      inventory: {
        cpus: 16,
        gpuIds: gpus ? [0, 1, 2, 3] : [],
        ...(limited ? { ramMb: 65_536 } : {}),
        ...(named ? { resources: { trainer: 2 * U } } : {}),
      },
    });
    attachMs += now() - t;
    if (i % 8 === 3 || i % 8 === 6) {
      await placer.claim(ask(16, gpus), { signal, onQueued: mustWait('a whole-machine fill') });
    } else {
      const pin = ask(1, gpus ? 1 : 0, '', 'prefer', limited ? ram(8192) : named ? trainer : {});
      await placer.claim(pin, { signal, onQueued: mustWait('a pin') });
      const b = await placer.claim(ask(15, gpus ? 3 : 0), { signal, onQueued: mustWait('a blocker') });
      blockers.push(b.claimId);
    }
  }
  for (const id of blockers) placer.release(id);

  const plainWaiters = [ask(16, 0), ask(1, 4), ask(16, 0, 'gpu', 'require'), ask(8, 4, 'gpu', 'prefer')];
  const oddWaiters = [
    ask(16, 0, '', 'prefer', ram(16_384)),
    ask(16, 0, '', 'prefer', trainer),
    ask(16, 0, '', 'prefer', half),
  ];
  const waiterAsks = mix ? mixIn(plainWaiters, oddWaiters) : plainWaiters;
  let queued = 0;
  let timedOut = false;
  // Each waiter has its own signal, as each Claim stream does in the server; made before the clock starts.
  const signals = Array.from({ length: waiters }, () => new AbortController().signal);
  const onQueued = () => queued++;
  const t0 = now();
  for (let i = 0; i < waiters; i++) {
    const w = waiterAsks[i % waiterAsks.length];
    const asked = mix ? { ...w, priority: i % 5, owner: i % 2 ? 'tenant-a' : 'tenant-b' } : w;
    void placer.claim(asked, { signal: signals[i], onQueued }).then(() => {
      throw new Error('bench workload broken: a waiter was granted');
    });
    if (now() - t0 > budgetMs) {
      timedOut = true;
      break;
    }
  }
  const enqueueMs = now() - t0;
  if (!timedOut && queued !== waiters) throw new Error(`bench workload broken: ${queued} of ${waiters} waiters queued`);
  return { placer, queued, enqueueMs, timedOut, mix, attachUs: (attachMs * 1000) / Math.max(1, machines) };
}

const measured = [ask(2, 1), ask(4, 0), ask(1, 2, 'gpu', 'prefer'), ask(8, 0)];
const measuredMixed = mixIn(measured, [
  ask(4, 0, '', 'prefer', ram(8192)),
  ask(2, 0, '', 'prefer', trainer),
  ask(1, 0, '', 'prefer', half),
]).map((a, i) => ({ ...a, ...(i % 2 ? { priority: 2 } : {}), owner: i % 3 ? 'tenant-a' : 'tenant-b' }));
const anySignal = new AbortController().signal;
const measuredWaited = mustWait('a measured ask');

/** One timed claim+release (the r-th measured ask; of the mixed workload's asks when `mix`), µs. */
export async function cycle(placer: Placer, r: number, mix = false): Promise<number> {
  const list = mix ? measuredMixed : measured;
  const a = now();
  const g = await placer.claim(list[r % list.length], { signal: anySignal, onQueued: measuredWaited });
  placer.release(g.claimId);
  return (now() - a) * 1000;
}

/** The p-th quantile (0..1) of ascending `sorted`, or null when empty. */
export function quantile(sorted: readonly number[], p: number): number | null {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : null;
}
