/**
 * Conservation under random operations (issue 23 acceptance): 10,000 seeded claims, releases (some behind a
 * release gate that holds the books until the runs are gone, SPEC R5), cancels, aborts, attaches (a re-attach
 * replaces the machine and loses its claims), detaches, pool resizes and retries over 20 machines with 3 named
 * resources, 2 pools and memory. The referee (test/support/conservation-referee.ts) checks every counter after
 * every event and every operation; at the end, everything given back, the books are full.
 * Reproduce a failing sequence with BERTH_CONSERVATION_SEED=<seed>.
 */
import { describe, expect, it } from 'vitest';
import type { Grant, MachineSpec, NormalizedAsk } from '../../src/placement/types.js';
import { UNIT } from '../../src/resources/quantity.js';
import { ConservationReferee } from '../support/conservation-referee.js';
import { prng } from '../support/placement-rules.js';

const U = UNIT;
const POOLS = { 'license/matlab': 6 * U, 'license/ansys': 2.5 * U };
/** Machine shapes: cores, device ids, memory (undefined = not limited) and named resources in units. */
const SHAPES: MachineSpec['inventory'][] = [
  { cpus: 8, gpuIds: [0, 1], ramMb: 16_384, resources: { trainer: U } },
  { cpus: 16, gpuIds: [], ramMb: 65_536, resources: { nic: 2 * U } },
  { cpus: 4, gpuIds: [0, 1, 2, 3], resources: { dongle: 1.5 * U } },
  { cpus: 32, gpuIds: [], resources: { trainer: 2 * U, nic: 4 * U } },
  { cpus: 2, gpuIds: [], ramMb: 4096 },
  { cpus: 12, gpuIds: [0, 1, 2, 3, 4, 5, 6, 7], ramMb: 262_144, resources: { dongle: U, trainer: U } },
];
const NAMES = Array.from({ length: 20 }, (_, i) => `w${i + 1}`);
const RUNS = ['r1', 'r2', 'r3', 'r4'];

/** What the sequence did, to show every dimension was exercised. */
interface Tally {
  grants: number;
  withRam: number;
  withNamed: number;
  withPool: number;
  clamped: number;
  lost: number;
  gated: number;
  shrunkUnderHeld: number;
  retried: number;
  failedPrecondition: number;
}

async function runSequence(seed: number, ops: number): Promise<{ violations: string[]; tally: Tally }> {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const tally: Tally = {
    grants: 0,
    withRam: 0,
    withNamed: 0,
    withPool: 0,
    clamped: 0,
    lost: 0,
    gated: 0,
    shrunkUnderHeld: 0,
    retried: 0,
    failedPrecondition: 0,
  };
  const r = new ConservationReferee(
    { name: 'engine', labels: [], remote: false, inventory: { cpus: 2, gpuIds: [] } },
    POOLS,
  );
  const p = r.placer;
  const gates: (() => void)[] = [];
  p.releaseGate = () => {
    if (rnd() >= 0.3) return undefined;
    tally.gated++;
    return new Promise<void>((resolve) => gates.push(resolve));
  };
  const waiting = new Map<string, AbortController>();
  const ended: NormalizedAsk[] = [];
  const byClaim = new Map<string, NormalizedAsk>();
  r.events.subscribe((e) => {
    if (e.kind === 'claim_lost') tally.lost++;
    if ((e.kind === 'claim_lost' || e.kind === 'claim_released') && byClaim.has(e.claimId ?? ''))
      ended.push(byClaim.get(e.claimId ?? '')!);
  });
  let nodes = 0;
  const claim = (a: NormalizedAsk) => {
    const ask = { ...a, node: `n${++nodes}` };
    const ac = new AbortController();
    waiting.set(ask.node, ac);
    r.claim(ask, ac.signal, (g?: Grant, err?: unknown) => {
      waiting.delete(ask.node);
      if (!g) {
        if ((err as { kind?: string }).kind === 'failed_precondition') tally.failedPrecondition++;
        ended.push(ask);
        return;
      }
      byClaim.set(g.claimId, ask);
      tally.grants++;
      if (g.allocation.ramMb) tally.withRam++;
      const got = Object.keys(g.allocation.resources ?? {});
      if (got.some((k) => !(k in POOLS))) tally.withNamed++;
      if (got.some((k) => k in POOLS)) tally.withPool++;
      if (g.clamped) tally.clamped++;
    });
    return ask.node;
  };
  const randomAsk = (): NormalizedAsk => {
    const resources: Record<string, number> = {};
    if (rnd() < 0.2) resources.trainer = pick([U, U / 2, U / 4]);
    if (rnd() < 0.15) resources.nic = pick([U, 2 * U]);
    if (rnd() < 0.1) resources.dongle = pick([U / 2, 1, U]);
    if (rnd() < 0.15) resources['license/matlab'] = pick([U, 2 * U]);
    if (rnd() < 0.1) resources['license/ansys'] = pick([U / 2, U]);
    return {
      cpus: pick([0, 1, 1, 2, 4, 8, 16, 40]),
      gpus: pick([0, 0, 0, 1, 2, 4]),
      ramMb: pick([undefined, undefined, 1024, 8192, 32_768, 500_000]),
      resources: Object.keys(resources).length ? resources : undefined,
      label: '',
      policy: 'prefer',
      node: '',
      runId: pick(RUNS),
      env: {},
    };
  };
  const attached = new Set<string>();
  for (const name of NAMES) {
    p.attach({ name, labels: [], remote: true, inventory: pick(SHAPES) });
    attached.add(name);
  }
  const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
  for (let i = 0; i < ops && r.violations.length === 0; i++) {
    const x = rnd();
    let what: string;
    if (x < 0.05 || attached.size === 0) {
      const name = pick(NAMES);
      const inventory = pick(SHAPES);
      p.attach({ name, labels: [], remote: true, inventory });
      attached.add(name);
      what = `attach ${name} ${JSON.stringify(inventory)}`;
    } else if (x < 0.08) {
      const name = pick([...attached]);
      p.detach(name);
      attached.delete(name);
      what = `detach ${name}`;
    } else if (x < 0.45) {
      const a = randomAsk();
      what = `claim ${claim(a)} ${JSON.stringify(a)}`;
    } else if (x < 0.65) {
      const id = r.held.size ? pick([...r.held.keys()]) : 'c0';
      p.release(id);
      what = `release ${id}`;
    } else if (x < 0.7) {
      const open = gates.splice(0, Math.ceil(rnd() * gates.length));
      for (const g of open) g();
      what = `open ${open.length} release gate(s)`;
    } else if (x < 0.75) {
      const run = pick(RUNS);
      what = `cancel ${run}: ${p.cancelRun(run)}`;
    } else if (x < 0.8) {
      const node = waiting.size ? pick([...waiting.keys()]) : '';
      waiting.get(node)?.abort(new Error('client went away'));
      what = `abort ${node}`;
    } else if (x < 0.86) {
      const name = pick(Object.keys(POOLS));
      const units = pick([0, U / 2, U, 2 * U, 3 * U, 6 * U, 10 * U]);
      const held = [...r.held.values()].reduce((n, h) => n + (h.pools[name] ?? 0), 0);
      if (units < held) tally.shrunkUnderHeld++;
      p.resizePool(name, units);
      what = `resize ${name} to ${units} (held ${held})`;
    } else {
      const a = ended.length ? ended.splice(Math.floor(rnd() * ended.length), 1)[0] : randomAsk();
      tally.retried++;
      what = `retry ${claim(a)} ${JSON.stringify(a)}`;
    }
    await tick();
    r.check(`seed ${seed} op ${i} (${what})`);
  }
  // Give everything back: waiters abort, held claims are released, every gate opens.
  for (const ac of waiting.values()) ac.abort(new Error('done'));
  for (let round = 0; round < 100 && (r.held.size || gates.length); round++) {
    for (const id of [...r.held.keys()]) p.release(id);
    for (const g of gates.splice(0)) g();
    await tick();
  }
  r.checkFull(`seed ${seed} at the end`);
  if (r.violations.length === 0) p.checkInvariants();
  return { violations: r.violations, tally };
}

describe('conservation of every dimension under random operations (issue 23 acceptance, SPEC P8)', () => {
  it('10,000 claims, releases, cancels, attaches, detaches, pool resizes and retries keep the books exact', async () => {
    const seed = Number(process.env.BERTH_CONSERVATION_SEED ?? 23);
    const { violations, tally } = await runSequence(seed, 10_000);
    if (process.env.BERTH_TALLY) console.log(JSON.stringify(tally));
    expect(violations, `seed ${seed}`).toEqual([]);
    // The sequence reached every dimension and every path (else it proves nothing).
    for (const [k, v] of Object.entries(tally)) expect(v, `${k} (seed ${seed})`).toBeGreaterThan(0);
  }, 120_000);
});
