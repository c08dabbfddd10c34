/**
 * A client process of the server-kill and takeover benches: holds argv[3] claims of 1 cpu + 1 GPU with a hold
 * (Ask.hold_ms 30 s) on argv[2] (one address, or several of one cluster, comma-separated: it follows the leader
 * hint, test/chaos/follower.ts), printing `{"granted": {claimId, machine, gpuIds}}` for each; whenever a claim's stream
 * breaks it resumes the claim with its token (every 200 ms, for at most 60 s), printing `{"resumed": {claimId,
 * machine, gpuIds, same}}` (`same`: the same machine and GPU ids, marked resumed) or `{"lost": …}`. On a line
 * "release" on stdin it releases every claim and exits. Bounded: exits by itself after 10 min.
 */
import type { Granted } from '../../generated/ts/berth/v1/placement.js';
import { claim, resumeClaim, type ClaimHandle } from '../../test/support/claims.js';
import { Follower } from '../../test/chaos/follower.js';
import { brokenLink } from '../../test/chaos/resumable.js';

const [address, count] = process.argv.slice(2);
const lead = new Follower(address.split(','), undefined, {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 300,
});
const say = (o: unknown): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const held: { handle: ClaimHandle; grant: Granted }[] = [];
const brief = (g: Granted) => ({ claimId: g.claimId, machine: g.machine, gpuIds: g.allocation?.gpuIds ?? [] });

async function keep(i: number): Promise<void> {
  for (;;) {
    const err = await held[i].handle.ended;
    lead.saw(err);
    if (releasing || !brokenLink(err)) return;
    const g = held[i].grant;
    const end = Date.now() + 60_000;
    for (;;) {
      await sleep(200);
      const h = resumeClaim(lead.stub(), g.claimId, g.resumeToken);
      const r = await h.granted.catch(() => undefined);
      if (r) {
        const same =
          r.resumed && r.machine === g.machine && String(r.allocation?.gpuIds) === String(g.allocation?.gpuIds);
        say({ resumed: { ...brief(r), same } });
        held[i].handle = h;
        break;
      }
      const e = await h.ended;
      lead.saw(e);
      if (!brokenLink(e) || Date.now() > end) return say({ lost: { claimId: g.claimId, why: e?.details } });
    }
  }
}

let releasing = false;
for (let i = 0; i < Number(count); i++) {
  const handle = claim(lead.stub(), { cpus: 1, gpus: 1, holdMs: 30_000, node: 'bench.claimer' });
  const grant = await handle.granted;
  held.push({ handle, grant });
  say({ granted: brief(grant) });
  void keep(i);
}
process.stdin.on('data', async (d: Buffer) => {
  if (!d.toString().includes('release')) return;
  releasing = true;
  await Promise.all(held.map((h) => h.handle.release().catch(() => undefined)));
  say({ released: held.length });
  process.exit(0);
});
setTimeout(() => process.exit(4), 600_000).unref();
