/**
 * Placement decision cost against the number of machines (issue 3: no scan of every machine per
 * decision). Grants and releases GPU and CPU claims on fleets of 50 and 5000 workers in one run
 * and prints the time per decision and the ratio between the two fleet sizes.
 */
import { EventBus } from '../src/events.js';
import { Placer } from '../src/placement/placer.js';
import type { NormalizedAsk } from '../src/placement/types.js';

const ask = (cpus: number, gpus: number, label = ''): NormalizedAsk => ({ cpus, gpus, label, policy: 'prefer', node: 'bench', runId: '', env: {} });

/** Mean µs per claim+release on a fleet of `n` workers, most of them busy. */
async function perDecision(n: number, rounds: number): Promise<number> {
  const placer = new Placer({ engine: { name: 'engine', labels: [], inventory: { cpus: 0, gpuIds: [] }, remote: false }, events: new EventBus() });
  for (let i = 0; i < n; i++) {
    placer.attach({ name: `w${i}`, labels: i % 10 === 0 ? ['gpu'] : [], inventory: { cpus: 16, gpuIds: i % 2 ? [0, 1, 2, 3] : [] }, remote: true });
  }
  const signal = new AbortController().signal;
  // Fill most of the fleet so a scan would have to walk past busy machines.
  const fill: string[] = [];
  for (let i = 0; i < n * 0.9; i++) fill.push((await placer.claim(ask(16, i % 2 ? 4 : 0), { signal })).claimId);
  const asks = [ask(2, 1), ask(4, 0), ask(1, 2, 'gpu'), ask(8, 0)];
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) {
    const g = await placer.claim(asks[r % asks.length], { signal });
    placer.release(g.claimId);
  }
  const us = Number(process.hrtime.bigint() - t0) / 1000 / rounds;
  for (const id of fill) placer.release(id);
  return us;
}

const rounds = 20_000;
await perDecision(50, 2_000); // warm-up
const small = await perDecision(50, rounds);
const large = await perDecision(5000, rounds);
console.log(`claim+release, 50 machines:   ${small.toFixed(2)} µs per decision`);
console.log(`claim+release, 5000 machines: ${large.toFixed(2)} µs per decision`);
console.log(`ratio 5000/50: ${(large / small).toFixed(2)}x for 100x the machines`);
