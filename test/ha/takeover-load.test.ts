/**
 * A takeover with thousands of journaled claims keeps its leadership (issue 20, SPEC S7): real `berth serve
 * --store etcd://…` processes with a 2 s leader lease and a real etcd. The leader grants the claims (each held
 * for its holder), is SIGKILLed, and the standby restores them all from etcd while every holder resumes at once:
 * the restore and the resumes must not starve the new leader's lease renewal, so it never deposes itself and
 * every claim comes back with its allocation. (Before the renewer had a thread of its own, restoring 5,000 claims
 * held the event loop for about 1.2 s, past the 1.4 s deadline of a 2 s lease less its margin, and the new leader
 * deposed itself: 'deposed while restoring'.)
 */
import { expect, it } from 'vitest';
import type { Granted } from '../../generated/ts/berth/v1/placement.js';
import { claim, resumeClaim, type ClaimHandle } from '../support/claims.js';
import { etcdSuite, serving } from '../support/cluster.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const { describeEtcd, cleanup, pair } = etcdSuite('takeover-load.test.ts');

/** Claims journaled before the leader's SIGKILL. */
const CLAIMS = 5000;
/** Claim streams opened at once. */
const WAVE = 200;

describeEtcd('a takeover under load (SPEC S7)', () => {
  it(`a standby restoring ${CLAIMS} journaled claims while every holder resumes keeps its leadership`, async () => {
    const { a, b } = await pair(['--cpus', String(CLAIMS), '--claim-hold', '120', '--restart-hold', '30']);
    const held: ClaimHandle[] = [];
    const grants: Granted[] = [];
    for (let i = 0; i < CLAIMS; i += WAVE) {
      const wave = Array.from({ length: Math.min(WAVE, CLAIMS - i) }, () =>
        claim(a.client, { cpus: 1, gpus: 0, holdMs: 120_000 }),
      );
      held.push(...wave);
      grants.push(...(await Promise.all(wave.map((c) => c.granted))));
    }
    await a.kill();
    await Promise.all(held.map((c) => c.ended));
    await serving(b);
    // every holder comes back at once: the resumes load the new leader right after its restore
    const back = grants.map((g) => resumeClaim(b.client, g.claimId, g.resumeToken));
    cleanup.push(() => {
      for (const c of back) c.call.cancel();
    });
    const again = await Promise.all(back.map((c) => c.granted));
    expect(again.map((g) => g.claimId)).toEqual(grants.map((g) => g.claimId));
    expect(again.every((g, i) => g.resumed && g.allocation?.cpus === grants[i].allocation?.cpus)).toBe(true);
    // three lease lifetimes after the resumes, the new leader still leads and has never deposed itself
    const since = Date.now();
    await until(() => Date.now() - since > 6000, 10_000, 200);
    expect(b.log()).not.toContain('"event":"cluster_deposed"');
    expect((await snapshot(b.client)).held.length).toBe(CLAIMS);
    await Promise.all(back.slice(0, WAVE).map((c) => c.release()));
  }, 120_000);
});
